// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "admin/jsonl_reader.hpp"

using comb::admin::jsonl_line;
using comb::admin::jsonl_reader;

namespace {

/// A FILE* holding `text` (an anonymous temporary file).
std::FILE* file_with(const std::string& text) {
  std::FILE* file = std::tmpfile();
  REQUIRE(file);
  REQUIRE(std::fwrite(text.data(), 1, text.size(), file) == text.size());
  std::rewind(file);
  return file;
}

} // namespace

TEST_CASE("jsonl_reader numbers lines, skips blank ones and flags a last line without newline", "[jsonl]") {
  std::FILE* file = file_with("a\n\n  \r\nb\r\nc");
  jsonl_reader reader(file, 100);
  jsonl_line line;
  REQUIRE(reader.next(line));
  CHECK(line.number == 1);
  CHECK(line.text == "a");
  CHECK(line.complete);
  REQUIRE(reader.next(line));
  CHECK(line.number == 4);
  CHECK(line.text == "b");
  REQUIRE(reader.next(line));
  CHECK(line.number == 5);
  CHECK(line.text == "c");
  CHECK_FALSE(line.complete);
  CHECK_FALSE(reader.next(line));
  CHECK_FALSE(reader.failed());
  std::fclose(file);
}

TEST_CASE("jsonl_reader keeps only the bound plus one byte of a long line", "[jsonl]") {
  // Longer than one read chunk, so the cut spans chunks.
  std::string long_line(200 * 1024, 'x');
  std::FILE* file = file_with(long_line + "\nshort\n");
  jsonl_reader reader(file, 1000);
  jsonl_line line;
  REQUIRE(reader.next(line));
  CHECK(line.text.size() == 1001);
  CHECK(line.complete);
  REQUIRE(reader.next(line));
  CHECK(line.number == 2);
  CHECK(line.text == "short");
  CHECK_FALSE(reader.next(line));
  std::fclose(file);
}
