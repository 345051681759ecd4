// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/event.hpp"
#include "protocol/result.hpp"
#include "storage/membership.hpp"

namespace comb::actors {

inline constexpr std::uint32_t join_request_kind = 28934;
inline constexpr std::uint32_t invite_kind = 28935;
inline constexpr std::uint32_t leave_request_kind = 28936;
inline constexpr std::uint32_t add_member_kind = 9030;
inline constexpr std::uint32_t remove_member_kind = 9031;
inline constexpr std::uint32_t change_role_kind = 9032;

/// Kinds that are requests to the community actor rather than events to store.
[[nodiscard]] bool is_membership_request(std::uint32_t kind) noexcept;

/// The command a verified, user-signed membership request asks for, or why it is malformed.
/// Closed communities join by invite code only; open ones admit any join request.
[[nodiscard]] protocol::result<storage::membership_command>
membership_command_for(const protocol::event& ev, bool closed_community, std::int64_t now);

/// The OK a membership request gets, with NIP-43's wording where it has one.
struct membership_reply {
  bool accepted = false;
  std::string message;
};

[[nodiscard]] membership_reply reply_for(std::uint32_t kind,
                                         storage::membership_outcome outcome,
                                         const std::string& relay_url);

} // namespace comb::actors
