// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/room_rules.hpp"

namespace comb::storage {

/// NIP-43 roles. Exactly one owner per community.
enum class member_role { owner, admin, member };

[[nodiscard]] std::string_view role_name(member_role role) noexcept;

[[nodiscard]] std::optional<member_role> parse_role(std::string_view name) noexcept;

/// Whether a holder of `role` manages the community: its owner or an admin.
[[nodiscard]] inline bool manages(std::optional<member_role> role) noexcept {
  return role == member_role::owner || role == member_role::admin;
}

/// Where a holder of `role` stands in the community for the room rules (none: an outsider).
[[nodiscard]] protocol::community_standing standing_of(std::optional<member_role> role) noexcept;

struct member {
  protocol::bytes32 pubkey{};
  member_role role = member_role::member;

  friend bool operator==(const member&, const member&) = default;
};

/// The write paths of DESIGN.md "The invariant" that act on an existing community. Each one
/// that changes the members writes the new 13534 list in the same transaction.
enum class membership_change {
  add_member,            ///< 9030 or admin CLI; refuses the owner role (use transfer)
  claim_membership,      ///< a join that needs no invite (open communities)
  claim_invite,          ///< 28934 with a code from the invites table
  remove_member,         ///< never removes the owner
  remove_member_if_role, ///< removes only if the member has `expected_role`
  update_role,           ///< admin <-> member; never touches or grants owner
  provision_owner,       ///< bootstrap or operator: subject becomes owner, others demoted to admin
  transfer_owner,        ///< subject becomes owner, the previous owner becomes a member
  backfill_allowlist,    ///< an empty community takes its allowlist as members
  republish,             ///< rewrites the list from the stored members (repair)
  ban_pubkey,            ///< stores a ban and removes the subject if a member; never the owner
  unban_pubkey,          ///< lifts a ban; membership is not restored
};

struct membership_command {
  membership_change change = membership_change::add_member;
  protocol::bytes32 subject{};
  member_role role = member_role::member;
  std::optional<member_role> expected_role;
  std::string invite_code;
  std::string added_by;
  /// Who signed the request (9030-9032, 28934, 28936); checked by role inside the transaction.
  /// Unset for operator and start-up paths, which are trusted.
  std::optional<protocol::bytes32> requested_by;
  /// The id of the signed request (28934, 28936, 9030-9032): remembered with the change for
  /// `request_window_seconds`, so the same request is never applied twice, on any pod.
  std::optional<protocol::bytes32> request_id;
  /// Why (ban_pubkey: stored with the ban and listed by NIP-86 listbannedpubkeys).
  std::string reason;
  /// add_member only (NIP-86 allowpubkey): lifts the subject's ban in the same step, as
  /// Flotilla restores a banned member by allowing them and has no other way back. The ban
  /// stays when the add is refused (the community is full), and only who may lift it may.
  bool lifts_ban = false;
};

/// How far a membership request's created_at may be from now, either way (NIP-43 asks for
/// requests made "now"). A request older than that is refused by time, so its id need only be
/// remembered for twice this long. As wide as NIP-42's AUTH allows: Flotilla sends a join each
/// time a space opens and shows any refusal as an error, so a member whose device clock AUTH
/// accepts must not be refused the join.
inline constexpr std::int64_t request_window_seconds = 600;

/// Members a user's request (a join, a NIP-43 or NIP-86 add) may take a community to: every
/// change writes the whole list, signed, stored, sent to every subscriber and pod, and in an
/// open community anyone may join, with a fresh key each time. Operators (comb-admin) may go
/// past it.
inline constexpr std::size_t max_community_members = 10000;
/// Members a user's own join (open, or by invite code) may take a community to: the rest is
/// kept for its owner and admins, so keys made by the thousand cannot lock them out of adding
/// the people they mean to.
inline constexpr std::size_t max_self_joined_members = max_community_members / 10 * 9;

enum class membership_outcome {
  changed,
  already_member,
  not_member,
  is_owner,
  role_mismatch,
  already_owner,
  invite_invalid,
  invite_expired,
  invite_exhausted,
  not_allowed,
  nothing_to_do,
  already_processed, ///< a request id seen before: nothing changes again
  banned, ///< the subject is banned from the community: not admitted
  community_full, ///< a user's request would take the members past max_community_members
  busy,   ///< the community's queue of requests was full: not tried (never stored)
  archived, ///< a user's or admin's request met an archived community: not tried (never stored)
  failed,
};

[[nodiscard]] std::string_view outcome_name(membership_outcome outcome) noexcept;

/// The outcome `outcome_name` names; nothing for another string.
[[nodiscard]] std::optional<membership_outcome> parse_outcome(std::string_view name) noexcept;

[[nodiscard]] std::string_view change_name(membership_change change) noexcept;

/// How many write paths and outcomes there are (for tables indexed by them).
inline constexpr std::size_t membership_change_count = 12;
inline constexpr std::size_t membership_outcome_count = 17;
static_assert(static_cast<std::size_t>(membership_change::unban_pubkey) + 1 == membership_change_count);
static_assert(static_cast<std::size_t>(membership_outcome::failed) + 1 == membership_outcome_count);

/// One command's result. `delta` is its 8000/8001, when it added or removed someone.
struct membership_result {
  /// A result with no delta.
  static membership_result of(membership_outcome outcome) {
    membership_result result;
    result.outcome = outcome;
    return result;
  }

  membership_outcome outcome = membership_outcome::failed;
  std::optional<protocol::event> delta;
  /// `delta` as stored, rendered once for the table and the subscribers.
  std::string delta_json;
};

/// A relay-signed event a membership write stored, and its JSON as stored.
struct relay_signed_event {
  protocol::event ev;
  std::string json;
};

/// The result of one transaction holding one or more commands (group commit).
struct membership_write {
  bool committed = false;
  std::string error; ///< why nothing was written, when !committed
  std::vector<membership_result> results;
  /// The new live 13534, when any command changed the members (or a republish ran).
  std::optional<protocol::event> list;
  /// `list` as stored (set whenever `list` is), rendered once for the table and the subscribers.
  std::string list_json;
  /// The members after the transaction, in list order; filled whenever committed.
  std::vector<member> members;
  /// 33534 role definitions first written with `list` (the first list naming those roles).
  std::vector<relay_signed_event> role_definitions;
  /// The community's state version after the transaction (note_access_change); 0 when unknown.
  std::int64_t state_version = 0;
  /// The version the transaction found under the community row lock (what it started from).
  std::int64_t previous_version = 0;
  /// Room state (39001/39002) rewritten because removed members left their rooms.
  std::vector<relay_signed_event> room_events;
  /// Every room of the community after the transaction, when `room_events` is not empty.
  std::optional<std::vector<protocol::room_state>> rooms;
  /// Not committed because the newest list already has this second: try again at this unix
  /// second (lists keep pace with the clock). 0 otherwise.
  std::int64_t retry_at = 0;
  /// Committed without waiting although the newest list was this many seconds ahead of the
  /// writer's clock (more than max_list_wait_seconds); 0 otherwise.
  std::int64_t clock_behind_seconds = 0;
};

/// How far ahead of the writer's clock the newest list (or room state) may be for a change that
/// takes access away (a removal, a ban, a close) to wait for it. Further ahead, the writer's
/// clock is behind the one that wrote it (comb-admin run from a host whose clock is ahead, a
/// pod's clock stepped back): such a change is written at once, a second after it, rather than
/// after the whole skew, which would leave a removed or banned member their access that long.
/// Other changes (joins) wait.
inline constexpr std::int64_t max_list_wait_seconds = 5;

} // namespace comb::storage
