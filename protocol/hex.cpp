// SPDX-License-Identifier: MIT
#include "protocol/hex.hpp"

#include <bit>
#include <cstring>

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

namespace {

constexpr std::uint64_t every_byte(std::uint8_t b) { return 0x0101010101010101ull * b; }

/// Eight lowercase hex characters (in memory order) to four bytes, eight at a time in one
/// 64-bit word; false when any is not one. A byte below 0x80 plus a constant below 0x80 never
/// carries into the next, so each test is one addition and a look at the bytes' high bits.
bool decode_eight(const char* from, std::uint8_t* to) noexcept {
  static_assert(std::endian::native == std::endian::little, "the first character is the low byte");
  std::uint64_t x;
  std::memcpy(&x, from, sizeof x);
  constexpr std::uint64_t high = every_byte(0x80);
  if (x & high)
    return false;
  const std::uint64_t at_least_0 = x + every_byte(0x80 - '0');
  const std::uint64_t above_9 = x + every_byte(0x80 - '9' - 1);
  const std::uint64_t at_least_a = x + every_byte(0x80 - 'a');
  const std::uint64_t above_f = x + every_byte(0x80 - 'f' - 1);
  const std::uint64_t digit = at_least_0 & ~above_9 & high;
  const std::uint64_t letter = at_least_a & ~above_f & high;
  if ((digit | letter) != high)
    return false;
  // '0'-'9' keep their low nibble; 'a'-'f' (0x61-0x66) add 9 to theirs.
  const std::uint64_t nibbles = (x & every_byte(0x0f)) + (letter >> 7) * 9;
  // Byte 2i becomes (nibble 2i << 4) | nibble 2i+1; then the even bytes close up.
  std::uint64_t pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff00ff00ff00ffull;
  pairs = (pairs | (pairs >> 8)) & 0x0000ffff0000ffffull;
  pairs = (pairs | (pairs >> 16)) & 0x00000000ffffffffull;
  const auto word = static_cast<std::uint32_t>(pairs);
  std::memcpy(to, &word, sizeof word);
  return true;
}

} // namespace

bool decode_lower_hex(std::string_view text, std::span<std::uint8_t> out) noexcept {
  if (text.size() != out.size() * 2)
    return false;
  // Every id of every history row is decoded here: eight characters at a time, then one table
  // look-up per character for the rest, with one test at the end (a branch per character cost
  // about 25 instructions per byte, the table alone about 14).
  const char* from = text.data();
  std::size_t i = 0;
  for (; i + 4 <= out.size(); i += 4)
    if (!decode_eight(from + 2 * i, out.data() + i))
      return false;
  const auto* rest = reinterpret_cast<const unsigned char*>(from);
  unsigned invalid = 0;
  for (; i < out.size(); ++i) {
    unsigned high = hex_values[rest[2 * i]];
    unsigned low = hex_values[rest[2 * i + 1]];
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
