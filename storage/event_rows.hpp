// SPDX-License-Identifier: MIT
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/event.hpp"

namespace comb::storage {

/// Tag values longer than this, or holding a NUL byte, are not indexed in event_tags: Postgres
/// text cannot hold NUL, and btree rows are bounded. Filters on such values match nothing.
constexpr std::size_t max_indexed_tag_value_bytes = 512;

/// The event_tags name of the rooms a comment or report borrows (protocol::room_referents): not one letter, so no
/// filter matches it; the readers' room rules do (storage/filter_sql.cpp `borrowed_rooms_sql`).
inline constexpr std::string_view borrowed_room_tag = "room";

[[nodiscard]] bool is_indexable_tag_value(std::string_view value) noexcept;

/// The d_tag column value that keys an address: `d` itself, or "\x01sha256:<hex>" of it when
/// `d` cannot be a btree key (see is_indexable_tag_value). A collision would need the author to
/// pick such a string for their own other address, so it can hurt nobody else.
[[nodiscard]] std::string address_key(std::string_view d);

/// The slot of the unique index that a replaceable or addressable event occupies.
struct address {
  std::int64_t community_id = 0;
  protocol::bytes32 pubkey{};
  std::uint32_t kind = 0;
  std::string d_key; ///< "" for replaceable kinds, address_key(d) for addressable ones

  friend auto operator<=>(const address&, const address&) = default;
};

/// The address of a replaceable or addressable event; nothing for other kinds.
[[nodiscard]] std::optional<address> address_of_event(std::int64_t community_id,
                                                      const protocol::event& ev);

/// An `a` tag value "<kind>:<pubkey hex>:<d>" as an address, if it names a replaceable or
/// addressable kind (a replaceable kind must have an empty d part).
[[nodiscard]] std::optional<address> parse_a_tag(std::int64_t community_id,
                                                 std::string_view value);

/// Single-letter tags with indexable values, each (name, value) once, for event_tags.
[[nodiscard]] std::vector<std::pair<char, std::string>> indexed_tags(const protocol::event& ev);

/// Ids named by the event's `e` tags (well-formed hex only).
[[nodiscard]] std::vector<protocol::bytes32> e_tag_ids(const protocol::event& ev);

/// Ids a deletion names as apps read it: its `e` ids, and also `a` values that are ids
/// (welshman 0.8.1 hides an event whose id or address any `e` or `a` value of a kind 5 holds).
/// Only the `e` ids are deleted (NIP-09); the others count for the checks of whose they are.
[[nodiscard]] std::vector<protocol::bytes32> deletion_named_ids(const protocol::event& ev);

/// Advisory-lock key serializing every writer of `a`, in every relay process.
[[nodiscard]] std::int64_t address_lock_key(const address& a);

/// Advisory-lock key of a community: deletions by id take it exclusively, inserts shared, so a
/// deletion and the event it names cannot pass each other in two concurrent transactions.
[[nodiscard]] std::int64_t community_lock_key(std::int64_t community_id);

} // namespace comb::storage
