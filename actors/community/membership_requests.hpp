// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/event.hpp"
#include "protocol/nip86.hpp"
#include "protocol/result.hpp"
#include "protocol/room.hpp"
#include "storage/membership.hpp"

namespace comb::actors {

inline constexpr std::uint32_t join_request_kind = 28934;
inline constexpr std::uint32_t invite_kind = 28935;
inline constexpr std::uint32_t leave_request_kind = 28936;
inline constexpr std::uint32_t add_member_kind = 9030;
inline constexpr std::uint32_t remove_member_kind = 9031;
inline constexpr std::uint32_t change_role_kind = 9032;

/// The longest invite code a join may claim: the relay mints codes of 32 characters and
/// createclaim takes at most this many, and a longer claim, refused before it is queued, would
/// weigh on the community's queue of requests.
using protocol::max_claim_bytes;

/// Joins and leaves one connection may have waiting for their outcome, of the community and of
/// its rooms each: it makes them for its own key, which needs one at a time, and each takes a
/// place in the community's queue.
inline constexpr std::size_t max_waiting_self_requests = 4;

/// Kinds that are requests to the community actor rather than events to store.
[[nodiscard]] bool is_membership_request(std::uint32_t kind) noexcept;

/// A room join (9021) or leave (9022): a connection makes them for its own key too.
[[nodiscard]] constexpr bool is_own_room_request_kind(std::uint32_t kind) noexcept {
  return kind == protocol::room_join_kind || kind == protocol::room_leave_kind;
}

/// Where a membership request arrived.
struct membership_context {
  bool closed_community = false;
  std::string host; ///< normalized; the `relay` tag of 9030-9032 must name it
  /// The member cache holds the request's author as a member: a member's join without a code
  /// (Flotilla sends `["claim", ""]` whenever a space is added) goes to the database, which
  /// answers `duplicate:` (NIP-43), instead of being refused here for want of a code.
  bool sender_is_member = false;
  /// The member cache holds the author as owner or admin (or there is no cache): 9030-9032 from
  /// anyone else are refused here as the database would refuse them (a 9031 naming its author,
  /// a leave, excepted), so that they never take the places the community's queue keeps for
  /// those who manage it (membership_queue).
  bool sender_manages = true;
};

/// The command a verified membership request asks for (carrying the event id as its request
/// id), or why it is malformed. Closed communities join by invite code only (a known member's
/// join may omit it); open ones admit any join request, with or without a claim. 9030-9032
/// must carry a `relay` tag naming this community (ws:// or wss:// of `context.host`). The `-`
/// tag is not required. Who may send a request (its authenticated author only) is
/// connection::admit_event's check.
[[nodiscard]] protocol::result<storage::membership_command>
membership_command_for(const protocol::event& ev, const membership_context& context,
                       std::int64_t now);

/// The OK a membership request gets, with NIP-43's wording where it has one.
struct membership_reply {
  bool accepted = false;
  std::string message;
};

[[nodiscard]] membership_reply reply_for(std::uint32_t kind,
                                         storage::membership_outcome outcome,
                                         const std::string& relay_url);

} // namespace comb::actors
