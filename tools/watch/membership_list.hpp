// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "tools/watch/ledger.hpp"

namespace comb::watch {

inline constexpr std::uint32_t membership_list_kind = 13534;
inline constexpr std::uint32_t member_added_kind = 8000;

struct member {
  pubkey_hex pubkey;
  /// NIP-43 role ids (the member tag's arguments after the key); empty for a plain member.
  std::vector<std::string> roles;
};

/// The role ids comb gives owners and admins (the `d` of its 33534 role definitions).
inline constexpr std::string_view owner_role_id = "owner";
inline constexpr std::string_view admin_role_id = "admin";

/// A NIP-43 member list (kind 13534) reduced to what the watcher needs.
struct membership_list {
  std::int64_t created_at = 0;
  std::vector<member> members;
};

/// The `["member", <hex>, <role id>...]` tags of a 13534 event; tags with a malformed key are
/// skipped (a key nobody can hold cannot join). The older shape's `"member"` role is no role.
/// Nothing for another kind. The caller checks the signature and the author.
[[nodiscard]] std::optional<membership_list> membership_from_event(const protocol::event& ev);

/// The list gives `viewer` the owner or admin role id: the only lists that may produce alerts.
[[nodiscard]] bool names_as_manager(const membership_list& list, std::string_view viewer);

/// The member keys in list order.
[[nodiscard]] std::vector<pubkey_hex> roster_of(const membership_list& list);

} // namespace comb::watch
