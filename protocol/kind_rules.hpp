// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/event.hpp"

namespace comb::protocol {

/// Kinds only a relay signs: NIP-43 lists, deltas and role definitions (13534, 8000, 8001,
/// 33534), the join reply (28935) and NIP-29 group metadata (39000-39005). A client's copy,
/// or another relay's in an import, would forge membership, roles or group state.
[[nodiscard]] bool relay_signed_kind(std::uint32_t kind) noexcept;

/// A grant of room creation to the user its `p` names, as Flotilla reads it (from any author).
inline constexpr std::uint32_t room_creation_grant_kind = 19004;

/// Kinds nobody but the relay may publish here, live or by import: those it signs, and 19004,
/// which Flotilla reads from any author as the relay's grant of room creation to the user its
/// `p` names (comb grants it by role and never writes one).
[[nodiscard]] bool relay_only_kind(std::uint32_t kind) noexcept;

/// Requests that act on a community's state when a relay receives them: NIP-43 joins and
/// leaves (28934, 28936), NIP-29 moderation (9000-9022) and comb's member commands
/// (9030-9032). Replaying one out of its moment (an import) would change members.
[[nodiscard]] bool state_request_kind(std::uint32_t kind) noexcept;

/// NIP-01's order of two versions of a replaceable or addressable event: whether the one created
/// at `created_at` with `id` wins over the other; the later wins, in the same second the lower id.
[[nodiscard]] constexpr bool wins_as_version(std::int64_t created_at, const bytes32& id,
                                             std::int64_t other_created_at, const bytes32& other_id) noexcept {
  if (created_at != other_created_at)
    return created_at > other_created_at;
  return id < other_id;
}

/// NIP-70: a repost (6, 16) whose content embeds another author's protected event (one with a
/// `["-"]` tag), which relays should refuse: it would republish what its author kept to
/// themselves. Content that is not an event is not looked into further.
[[nodiscard]] bool reposts_protected_event(const event& ev);

/// How many events (`e`) and addresses (`a`) a deletion (kind 5) names.
[[nodiscard]] std::size_t deletion_targets(const event& ev) noexcept;

} // namespace comb::protocol
