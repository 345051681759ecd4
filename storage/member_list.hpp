// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/signature.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

inline constexpr std::uint32_t member_list_kind = 13534;
inline constexpr std::uint32_t member_added_kind = 8000;
inline constexpr std::uint32_t member_removed_kind = 8001;
inline constexpr std::uint32_t role_definition_kind = 33534;

/// The NIP-43 role id a member tag carries for `role` (and the `d` of its 33534 definition);
/// nothing for plain members, whose tag carries no role.
[[nodiscard]] std::optional<std::string_view> role_id(member_role role) noexcept;

/// The roles with a role id that `members` assign, owner before admin.
[[nodiscard]] std::vector<member_role> roles_used(const std::vector<member>& members);

/// The created_at of a new list: now, or one second past the community's newest earlier list
/// (retired ones included) when that is later, so two lists never share a second or an id and
/// the newest always wins.
[[nodiscard]] std::int64_t next_list_time(std::int64_t now, std::int64_t newest_list_at) noexcept;

/// The relay-signed 13534 (NIP-43): `["-"]`, then per member in order `["member", <hex>]`, or
/// `["member", <hex>, <role id>]` for the owner and admins.
[[nodiscard]] protocol::event sign_member_list(const protocol::key_pair& relay_key,
                                               const std::vector<member>& members,
                                               std::int64_t created_at);

/// The relay-signed 8000 (added) or 8001 (removed): `["-"]`, `["p", <hex>]`.
[[nodiscard]] protocol::event sign_member_delta(const protocol::key_pair& relay_key,
                                                std::uint32_t kind,
                                                const protocol::bytes32& subject,
                                                std::int64_t created_at);

/// The relay-signed 33534 defining `role` (owner or admin): `["-"]`, `["d", <role id>]`,
/// `label`, `description`, `order`.
[[nodiscard]] protocol::event sign_role_definition(const protocol::key_pair& relay_key,
                                                   member_role role, std::int64_t created_at);

/// Whether a stored 13534 is in the current shape: no plain member tagged with the old
/// `"member"` role, and every role id it names among `defined_role_ids` (the `d` of the
/// community's stored 33534s). A list that is not must be written again (start-up upgrade).
[[nodiscard]] bool list_in_current_shape(const protocol::event& list,
                                         const std::set<std::string>& defined_role_ids);

/// The members a 13534 names, in order; nothing if a member tag is malformed. Reads both the
/// current shape and the older one (`["member", <hex>, "member"]`).
[[nodiscard]] std::optional<std::vector<member>> members_of_list(const protocol::event& list);

} // namespace comb::storage
