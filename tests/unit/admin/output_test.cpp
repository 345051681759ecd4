// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <string>

#include "admin/output.hpp"

using comb::admin::terminal_safe;

TEST_CASE("what users wrote reaches the operator's terminal without its control characters", "[admin]") {
  CHECK(terminal_safe("Pizza night") == "Pizza night");
  CHECK(terminal_safe("caf\xc3\xa9 \xf0\x9f\x8d\x95") == "caf\xc3\xa9 \xf0\x9f\x8d\x95"); // UTF-8 kept
  // An OSC 52 clipboard write, a line erase, a carriage return and a forged tab-separated row.
  CHECK(terminal_safe("x\x1b]52;c;Y3Vy\x07\x1b[2K\rpizza\t3\nvip")
        == R"(x\u001b]52;c;Y3Vy\u0007\u001b[2K\u000dpizza\u00093\u000avip)");
  CHECK(terminal_safe(std::string("a\0b", 3)) == R"(a\u0000b)");
  CHECK(terminal_safe("del\x7f") == R"(del\u007f)");
  // C1 controls (CSI as one code point), and a lone 0xc2 at the end.
  CHECK(terminal_safe("\xc2\x9b" "2J") == R"(\u009b2J)");
  CHECK(terminal_safe("\xc2\xa0x\xc2") == "\xc2\xa0x\xc2");
}
