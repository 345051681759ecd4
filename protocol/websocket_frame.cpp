// SPDX-License-Identifier: MIT
#include "protocol/websocket_frame.hpp"

namespace comb::protocol {
namespace {

constexpr std::uint8_t fin_text = 0x81;
constexpr std::size_t max_short_length = 125;
constexpr std::uint8_t length_16_bits = 126;
constexpr std::uint8_t length_64_bits = 127;

/// Writes `value` as `count` bytes, most significant first (network order), after `at`.
void put_big_endian(text_frame_header& header, std::size_t at, std::uint64_t value, int count) {
  for (int i = count - 1; i >= 0; --i) {
    header.bytes[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value & 0xff);
    value >>= 8;
  }
}

} // namespace

text_frame_header make_text_frame_header(std::size_t payload_bytes) {
  text_frame_header header;
  header.bytes[0] = fin_text;
  if (payload_bytes <= max_short_length) {
    header.bytes[1] = static_cast<std::uint8_t>(payload_bytes);
    header.size = 2;
  } else if (payload_bytes <= 0xffff) {
    header.bytes[1] = length_16_bits;
    put_big_endian(header, 2, payload_bytes, 2);
    header.size = 4;
  } else {
    header.bytes[1] = length_64_bits;
    put_big_endian(header, 2, payload_bytes, 8);
    header.size = 10;
  }
  return header;
}

} // namespace comb::protocol
