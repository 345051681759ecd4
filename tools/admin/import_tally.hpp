// SPDX-License-Identifier: MIT
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "admin/output.hpp"

namespace comb::admin {

/// What an import did so far: the summary's counts.
struct import_tally {
  std::uint64_t read = 0;      ///< non-blank lines
  std::uint64_t stored = 0;    ///< new events (replacing ones included)
  std::uint64_t replaced = 0;  ///< of `stored`: displaced an older version of their key
  std::uint64_t duplicate = 0; ///< already stored, or older than the stored version
  std::uint64_t vanished = 0;  ///< NIP-62 requests to vanish carried out (their author's events deleted)
  std::uint64_t bad_lines = 0; ///< not a valid event (also counted in `refused`)
  std::map<std::string, std::uint64_t> refused; ///< by reason
  std::vector<std::uint64_t> bad_line_numbers; ///< the first ones (as many as are reported)

  void refuse(const std::string& reason) { ++refused[reason]; }

  [[nodiscard]] std::uint64_t refused_total() const;

  /// The counts as JSON fields of the command's result.
  void describe(boost::json::object& fields) const;
};

/// Progress on stderr while an import runs: one line redrawn in place on a terminal (counts and
/// rate, at most five times a second); otherwise a plain line every `plain_every`.
class import_progress {
public:
  explicit import_progress(std::FILE* stream,
                           std::chrono::seconds plain_every = std::chrono::seconds(5));

  /// Shows the tally if it is time to.
  void tick(const import_tally& tally);

  /// Before a message on the same stream: a terminal's progress line is wiped, to be redrawn
  /// below the message by the next tick.
  void clear_line();

  /// Ends the progress display (a terminal's line is finished with a newline).
  void done(const import_tally& tally);

private:
  void show(const import_tally& tally);

  std::FILE* stream_;
  bool terminal_;
  std::chrono::steady_clock::duration every_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_shown_;
  bool shown_ = false;
};

/// The summary lines printed at the end ("read 10", "stored 8", ..., "refused expired 1").
void say_summary(const import_tally& tally, const reporter& out);

} // namespace comb::admin
