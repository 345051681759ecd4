// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/signature.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

inline constexpr std::uint32_t member_list_kind = 13534;
inline constexpr std::uint32_t member_added_kind = 8000;
inline constexpr std::uint32_t member_removed_kind = 8001;

/// The created_at of a new list: now, or one second past the community's newest earlier list
/// (retired ones included) when that is later, so two lists never share a second or an id and
/// the newest always wins.
[[nodiscard]] std::int64_t next_list_time(std::int64_t now, std::int64_t newest_list_at) noexcept;

/// The relay-signed 13534: `["-"]`, then `["member", <hex>, <role>]` per member in order.
[[nodiscard]] protocol::event sign_member_list(const protocol::key_pair& relay_key,
                                               const std::vector<member>& members,
                                               std::int64_t created_at);

/// The relay-signed 8000 (added) or 8001 (removed): `["-"]`, `["p", <hex>]`.
[[nodiscard]] protocol::event sign_member_delta(const protocol::key_pair& relay_key,
                                                std::uint32_t kind,
                                                const protocol::bytes32& subject,
                                                std::int64_t created_at);

/// The members a 13534 names, in order; nothing if a member tag is malformed.
[[nodiscard]] std::optional<std::vector<member>> members_of_list(const protocol::event& list);

} // namespace comb::storage
