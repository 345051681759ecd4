// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace comb::protocol {

using bytes32 = std::array<std::uint8_t, 32>;
using bytes64 = std::array<std::uint8_t, 64>;

/// Decodes exactly 2 * out.size() lowercase hex digits. Uppercase, odd lengths and any other
/// character are refused, because NIP-01 ids and keys are lowercase hex.
[[nodiscard]] bool decode_lower_hex(std::string_view text, std::span<std::uint8_t> out) noexcept;

/// Lowercase hex of `bytes`, written to the 2 * bytes.size() characters at `to`.
void write_hex(std::span<const std::uint8_t> bytes, char* to) noexcept;

/// Lowercase hex of `bytes`, appended to `out`.
void append_hex(std::string& out, std::span<const std::uint8_t> bytes);

[[nodiscard]] std::string to_hex(std::span<const std::uint8_t> bytes);

/// A fixed-size array from lowercase hex, or nothing.
template <std::size_t N>
[[nodiscard]] std::optional<std::array<std::uint8_t, N>> array_from_hex(std::string_view text) {
  std::array<std::uint8_t, N> out{};
  if (!decode_lower_hex(text, out))
    return std::nullopt;
  return out;
}

/// Hash for ids and keys, which are already uniformly distributed.
struct bytes32_hash {
  std::size_t operator()(const bytes32& value) const noexcept {
    std::size_t h = 0;
    std::memcpy(&h, value.data(), sizeof h);
    return h;
  }
};

} // namespace comb::protocol
