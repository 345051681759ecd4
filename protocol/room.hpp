// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/filter.hpp"
#include "protocol/result.hpp"
#include "protocol/zap.hpp"

namespace comb::protocol {

/// NIP-29 rooms (groups) inside a community: the kinds users send and the relay signs.
inline constexpr std::uint32_t room_put_user_kind = 9000;
inline constexpr std::uint32_t room_remove_user_kind = 9001;
inline constexpr std::uint32_t room_edit_metadata_kind = 9002;
inline constexpr std::uint32_t room_delete_event_kind = 9005;
inline constexpr std::uint32_t room_create_kind = 9007;
inline constexpr std::uint32_t room_delete_kind = 9008;
inline constexpr std::uint32_t room_create_invite_kind = 9009;
inline constexpr std::uint32_t room_pin_list_kind = 9010;
inline constexpr std::uint32_t room_join_kind = 9021;
inline constexpr std::uint32_t room_leave_kind = 9022;
inline constexpr std::uint32_t room_metadata_kind = 39000;
inline constexpr std::uint32_t room_admins_kind = 39001;
inline constexpr std::uint32_t room_members_kind = 39002;
inline constexpr std::uint32_t room_roles_kind = 39003;

/// NIP-29's group metadata events (metadata, admins, members, roles): what a private room shows
/// to a reader who is not its member. Flotilla tells who is in a room from its newest 39002,
/// so one who left or was removed must read the list that drops them. Pins (39005) name
/// messages, and stay with them.
[[nodiscard]] constexpr bool is_group_metadata_kind(std::uint32_t kind) noexcept {
  return kind >= room_metadata_kind && kind <= room_roles_kind;
}
inline constexpr std::uint32_t room_pins_kind = 39005;

/// A 9010 pins at most this many events (NIP-29 lets the relay limit them).
inline constexpr std::size_t max_room_pins = 100;

/// Room ids are at most this long (they become `d` tags and database keys).
inline constexpr std::size_t max_room_id_bytes = 64;

/// `h` tags one event may carry: every delivery reads its rooms, per subscription it reaches, so
/// thousands of copies of `["h","_"]` would cost each of them a scan. Flotilla writes one.
inline constexpr std::size_t max_rooms_per_event = 16;

/// When `ev` names more rooms than max_rooms_per_event, or more distinct addresses it borrows
/// from than max_referent_addresses (but a deletion, whose targets are bounded as such), why it
/// is refused (without a prefix).
[[nodiscard]] std::optional<std::string> too_many_rooms(const event& ev);

/// A 9000 may give a member at most this many roles.
inline constexpr std::size_t max_roles_per_member = 8;

/// 9000-9020 moderation and 9021/9022 join and leave: requests that change a room's state.
[[nodiscard]] bool is_room_request_kind(std::uint32_t kind) noexcept;

/// 39000-39005: room state only the relay signs.
[[nodiscard]] bool is_room_state_kind(std::uint32_t kind) noexcept;

/// Letters, digits, `-`, `_` and `.`, 1 to max_room_id_bytes long.
[[nodiscard]] bool valid_room_id(std::string_view id) noexcept;

/// The room an event is posted to: its `h` tag; nothing when it has none.
[[nodiscard]] const std::string* room_of(const event& ev) noexcept;

/// 9000 and 9001 show to each person a `p` tag of theirs names, whatever the room hides from
/// them: Flotilla learns it was let in or removed from `{kinds: [9000, 9001], #p: [me], #h: [room]}`.
[[nodiscard]] constexpr bool shown_to_named(std::uint32_t kind) noexcept {
  return kind == room_put_user_kind || kind == room_remove_user_kind;
}

/// Whether `ev` is a 9000 or 9001 with a `p` tag naming `pubkey` in lowercase hex, as the
/// database compares it (shown_to_named).
[[nodiscard]] bool names_in_room_change(const event& ev, const bytes32& pubkey);

/// Some events name the room of what they refer to only through it: Flotilla copies no `h`
/// onto a NIP-22 comment (makeComment) nor onto a NIP-56 report (makeReport), its reactions and
/// deletions copy the `h` of what they react to or delete, which a comment has none of, and a
/// NIP-57 zap receipt comes from the payee's Lightning service, which knows no rooms, newer
/// Flotilla's NIP-88 poll vote names its poll only, and newer welshman's pin (39067) the message
/// it pins (its id, and maybe its title, would show a private room's message to every reader of
/// the community). Such an event without an `h` of its own
/// borrows the rooms of the events it refers to (its referents): a comment's `E` tags (its
/// thread's root), the `e` tags of the others (what it deletes, reacts to, reports, zapped, votes
/// in, pins), whether the referent names its rooms or borrows them too.
inline constexpr std::uint32_t deletion_kind = 5;
inline constexpr std::uint32_t reaction_kind = 7;
inline constexpr std::uint32_t poll_vote_kind = 1018;
inline constexpr std::uint32_t comment_kind = 1111;
inline constexpr std::uint32_t report_kind = 1984;
inline constexpr std::uint32_t pin_kind = 39067;
inline constexpr std::array<std::uint32_t, 7> borrower_kinds{deletion_kind, reaction_kind, poll_vote_kind,
                                                             comment_kind, report_kind, zap_receipt_kind,
                                                             pin_kind};
[[nodiscard]] constexpr bool borrows_rooms(std::uint32_t kind) noexcept {
  return std::ranges::find(borrower_kinds, kind) != borrower_kinds.end();
}
/// An addressable event without an `h` keeps the rooms of the version it replaces, borrowed as a
/// comment borrows its thread's: Flotilla edits a room's calendar event (31923) without the `h`
/// it was posted with, and the edit must not take it out of a private room to every reader.
/// Room state (39000-39005) names its room in its `d`. Replaceable kinds (profiles, follow and
/// relay lists) are never posted in a room, and are too common to probe for one.
[[nodiscard]] bool keeps_rooms_of_replaced(std::uint32_t kind) noexcept;
/// Events that may be stored with borrowed rooms: borrows_rooms, keeps_rooms_of_replaced.
[[nodiscard]] bool may_carry_borrowed_rooms(std::uint32_t kind) noexcept;
/// Whether `f` may match an event stored with borrowed rooms (may_carry_borrowed_rooms).
[[nodiscard]] bool may_match_borrower(const filter& f) noexcept;
/// The ids of an event's referents (lowercase hex, as the database reads them:
/// storage/filter_sql.cpp `borrowed_rooms_sql`); empty for an event that borrows no rooms.
[[nodiscard]] std::vector<bytes32> room_referents(const event& ev);
/// The addresses ("<kind>:<pubkey>:<d>") whose live versions' rooms `ev` borrows, as it borrows
/// those of the referents it names by id (storage/store_plan.cpp reads them): a comment's `A`
/// tags (its root: an article, a calendar event), whether or not it names rooms of its own;
/// another borrower's `a` tags (what it deletes, pins, reacts to by address) when it names none,
/// so a private room's calendar event deleted by its address does not show that address to the
/// community. Only addresses that can be in rooms (keeps_rooms_of_replaced), with a lowercase
/// pubkey; empty for other kinds.
[[nodiscard]] std::vector<std::string_view> referent_addresses(const event& ev);
/// An event borrows from at most this many addresses: each is locked and read with the batch.
inline constexpr std::size_t max_referent_addresses = 16;
/// Whether `ev` borrows rooms from what it refers to: a borrower without an `h` that names a
/// referent, by id (room_referents) or by address (referent_addresses).
[[nodiscard]] bool borrows_from_referents(const event& ev);
/// The ids of what a comment or a report refers to (its `E`, its `e` tags), whether or not it
/// names rooms of its own: a comment in a thread of a restricted room is posted there, whatever
/// `h` it carries (room_referents: the same, only for one that names none).
[[nodiscard]] std::vector<bytes32> thread_referents(const event& ev);

/// The rooms an event belongs to: the `d` of the relay's 39000-39005, else the value of every
/// `h` tag (an event may name several rooms); empty for an event of no room.
[[nodiscard]] std::vector<std::string> rooms_of_event(const event& ev);

/// The rooms a stored event belongs to, read from its JSON as comb renders it (tags before
/// content, and a string never holds an unescaped `["h","`, so content cannot fake a tag): as
/// rooms_of_event. Cheap enough for every history event. Nothing for an event of no room.
struct rendered_rooms {
  std::vector<std::string> rooms;
  std::uint32_t kind = 0;
  std::vector<std::string> named; ///< the `p` values of a 9000 or 9001 (shown_to_named)
};
[[nodiscard]] std::optional<rendered_rooms> rooms_of_rendered(std::string_view json);
/// The kind of an event as comb renders it (`"kind":` follows the id, pubkey and created_at).
[[nodiscard]] std::optional<std::uint32_t> rendered_kind(std::string_view json);

struct room_flags {
  /// Only members read its messages; its group metadata (is_group_metadata_kind) shows to
  /// every reader, as NIP-29 has it unless the room is also hidden.
  bool is_private = false;
  bool restricted = false; ///< only members write
  bool hidden = false;     ///< metadata only for members
  bool closed = false;     ///< joins need an invite code

  friend bool operator==(const room_flags&, const room_flags&) = default;
};

struct room_metadata {
  std::string name;
  std::string about;
  std::string picture;
  room_flags flags;

  friend bool operator==(const room_metadata&, const room_metadata&) = default;
};

enum class room_action {
  put_user,      ///< 9000: add a member, or set their roles
  remove_user,   ///< 9001
  edit_metadata, ///< 9002: name, about, picture and the flags (as given: a flag absent is off)
  delete_event,  ///< 9005
  create_room,   ///< 9007
  delete_room,   ///< 9008: the room and its events
  create_invite, ///< 9009: a `code` for a closed room
  join,          ///< 9021, with an optional `code`
  leave,         ///< 9022: the relay issues the 9001
  update_pins,   ///< 9010: the whole pin list, in display order
};

/// A verified 9000-9022 event read as what it asks for.
struct room_request {
  room_action action = room_action::join;
  std::string room;
  bytes32 author{};
  bytes32 subject{};               ///< put/remove: the `p`; join/leave: the author
  std::vector<std::string> roles;  ///< put_user: the role names after the pubkey
  std::optional<std::string> name, about, picture; ///< edit_metadata: fields given
  room_flags flags;                ///< edit_metadata (and create: none)
  std::vector<bytes32> targets;    ///< delete_event: the `e` ids
  std::string code;                ///< create_invite, join
  std::vector<tag> pins;           ///< update_pins: its `e` and `a` tags, in order
};

/// Reads a 9000-9022 event; why not, for one that lacks what its kind needs (`invalid:`).
[[nodiscard]] result<room_request> parse_room_request(const event& ev);

/// The one user a request to add or remove someone names in its `p` tags (a room's 9000 and
/// 9001, the community's 9030-9032): `invalid:` when none names a hex pubkey or two name
/// different users. A request applied to its first user only would answer true for others it
/// left out, and its stored event would claim a change the state does not hold.
[[nodiscard]] result<bytes32> named_user(const event& ev);

/// NIP-29 late publication: an event posted to a room more than `late_seconds` before `now`
/// is refused (`invalid:`); events without an `h` tag are not concerned.
[[nodiscard]] std::optional<rejection> check_room_time(const event& ev, std::int64_t now,
                                                       std::int64_t late_seconds);

} // namespace comb::protocol
