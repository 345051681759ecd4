// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <vector>

#include "protocol/websocket_frame.hpp"

using comb::protocol::make_text_frame_header;

namespace {

std::vector<int> bytes_of(std::size_t payload_bytes) {
  auto header = make_text_frame_header(payload_bytes);
  return {header.bytes.begin(), header.bytes.begin() + header.size};
}

} // namespace

TEST_CASE("a text frame header carries FIN, the text opcode and the shortest length form",
          "[protocol][websocket]") {
  CHECK(bytes_of(0) == std::vector<int>{0x81, 0});
  CHECK(bytes_of(125) == std::vector<int>{0x81, 125});
  CHECK(bytes_of(126) == std::vector<int>{0x81, 126, 0, 126});
  CHECK(bytes_of(65535) == std::vector<int>{0x81, 126, 0xff, 0xff});
  CHECK(bytes_of(65536) == std::vector<int>{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0});
  CHECK(bytes_of(0x0102030405060708ULL)
        == std::vector<int>{0x81, 127, 1, 2, 3, 4, 5, 6, 7, 8});
}
