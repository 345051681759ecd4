// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/hex.hpp"

namespace comb::protocol {

using tag = std::vector<std::string>;

/// A NIP-01 event as it travels the wire. Only `event_from_json` builds one from untrusted input.
struct event {
  bytes32 id{};
  bytes32 pubkey{};
  std::int64_t created_at = 0;
  std::uint32_t kind = 0;
  std::vector<tag> tags;
  std::string content;
  bytes64 sig{};

  friend bool operator==(const event&, const event&) = default;
};

/// About what `ev` holds in memory once parsed: its strings with their own allocations. Bounds
/// that hold parsed events count this, not their JSON, which may be far smaller.
[[nodiscard]] std::size_t parsed_bytes(const event& ev) noexcept;

/// How the relay stores a kind (NIP-01 "Kinds").
enum class kind_class { regular, replaceable, ephemeral, addressable };

[[nodiscard]] kind_class classify(std::uint32_t kind) noexcept;

/// Replaceable or addressable: a newer event of the same address replaces it.
[[nodiscard]] bool has_address(std::uint32_t kind) noexcept;

/// The value of the first tag named `name` that has a value, or nothing.
[[nodiscard]] const std::string* first_tag_value(const event& ev, std::string_view name) noexcept;

/// The `d` tag that keys an addressable event; "" when absent, as NIP-01 says.
[[nodiscard]] std::string_view d_tag(const event& ev) noexcept;

/// NIP-70: the event carries the `["-"]` tag.
[[nodiscard]] bool is_protected(const event& ev) noexcept;

/// NIP-40: the `expiration` tag as a unix time, if present and a valid non-negative integer.
[[nodiscard]] std::optional<std::int64_t> expiration_of(const event& ev) noexcept;

/// NIP-40: whether `ev` carries an expiration at or before `now` (unix seconds).
[[nodiscard]] bool has_expired(const event& ev, std::int64_t now) noexcept;

/// "<kind>:<pubkey hex>:<d>", the address NIP-01 and NIP-09 use for addressable events.
[[nodiscard]] std::string address_of(const event& ev);

/// An address as an `a` or `A` tag writes it (address_of), read by its grammar alone: a kind in
/// digits, a lowercase pubkey, the `d` after the second colon. Whether the kind has addresses is
/// the caller's to check.
struct address_value {
  std::uint32_t kind = 0;
  bytes32 pubkey{};
  std::string_view d; ///< into the parsed text
};
[[nodiscard]] std::optional<address_value> parse_address_value(std::string_view value) noexcept;

} // namespace comb::protocol
