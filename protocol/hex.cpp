// SPDX-License-Identifier: MIT
#include "protocol/hex.hpp"

namespace comb::protocol {
namespace {

constexpr char digits[] = "0123456789abcdef";

/// Each character's value as a lowercase hex digit; 0xff for every other character.
constexpr std::array<std::uint8_t, 256> hex_values = [] {
  std::array<std::uint8_t, 256> table{};
  table.fill(0xff);
  for (int c = '0'; c <= '9'; ++c)
    table[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c)
    table[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c - 'a' + 10);
  return table;
}();

} // namespace

bool decode_lower_hex(std::string_view text, std::span<std::uint8_t> out) noexcept {
  if (text.size() != out.size() * 2)
    return false;
  // One table look-up per character and one test at the end: every id of every history row
  // is decoded here, and a branch per character cost about 25 instructions per byte.
  const auto* from = reinterpret_cast<const unsigned char*>(text.data());
  unsigned invalid = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    unsigned high = hex_values[from[2 * i]];
    unsigned low = hex_values[from[2 * i + 1]];
    invalid |= high | low;
    out[i] = static_cast<std::uint8_t>((high << 4) | low);
  }
  return (invalid & 0xf0) == 0;
}

void write_hex(std::span<const std::uint8_t> bytes, char* to) noexcept {
  for (std::uint8_t b : bytes) {
    *to++ = digits[b >> 4];
    *to++ = digits[b & 0x0f];
  }
}

void append_hex(std::string& out, std::span<const std::uint8_t> bytes) {
  std::size_t at = out.size();
  out.resize(at + bytes.size() * 2);
  // Through a pointer: a store via out[] may alias the string itself, so the compiler reloads
  // its data pointer for every character (ids, keys and signatures of every event).
  write_hex(bytes, out.data() + at);
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  append_hex(out, bytes);
  return out;
}

} // namespace comb::protocol
