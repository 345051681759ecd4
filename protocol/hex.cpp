// SPDX-License-Identifier: MIT
#include "protocol/hex.hpp"

namespace comb::protocol {
namespace {

constexpr char digits[] = "0123456789abcdef";

int lower_hex_value(char c) noexcept {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

} // namespace

bool decode_lower_hex(std::string_view text, std::span<std::uint8_t> out) noexcept {
  if (text.size() != out.size() * 2)
    return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    int high = lower_hex_value(text[2 * i]);
    int low = lower_hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0)
      return false;
    out[i] = static_cast<std::uint8_t>((high << 4) | low);
  }
  return true;
}

void append_hex(std::string& out, std::span<const std::uint8_t> bytes) {
  std::size_t at = out.size();
  out.resize(at + bytes.size() * 2);
  // Through a local pointer: a store via out[] may alias the string itself, so the compiler
  // reloads its data pointer for every character (ids, keys and signatures of every event).
  char* to = out.data() + at;
  for (std::uint8_t b : bytes) {
    *to++ = digits[b >> 4];
    *to++ = digits[b & 0x0f];
  }
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  append_hex(out, bytes);
  return out;
}

} // namespace comb::protocol
