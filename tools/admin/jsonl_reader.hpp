// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace comb::admin {

/// One line of a JSONL file. A line longer than the bound keeps only its first `max_bytes + 1`
/// bytes (enough to know it is too long), so a hostile file cannot make the reader hold it.
struct jsonl_line {
  std::uint64_t number = 0; ///< 1-based
  std::string text;         ///< without the newline (and a trailing '\r')
  bool complete = true;     ///< false for a last line with no newline (a truncated file)
};

/// Reads lines from a FILE* in fixed-size chunks: memory stays bounded by the line bound.
class jsonl_reader {
public:
  jsonl_reader(std::FILE* file, std::size_t max_bytes);

  /// The next line, skipping blank ones; false at the end of the file or on a read error.
  bool next(jsonl_line& line);

  /// True when reading stopped on an error rather than the end of the file.
  [[nodiscard]] bool failed() const noexcept { return failed_; }

private:
  bool fill();

  std::FILE* file_;
  std::size_t max_bytes_;
  std::vector<char> buffer_;
  std::size_t start_ = 0;
  std::size_t end_ = 0;
  std::uint64_t number_ = 0;
  bool eof_ = false;
  bool failed_ = false;
};

} // namespace comb::admin
