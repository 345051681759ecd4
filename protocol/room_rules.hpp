// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/room.hpp"

namespace comb::protocol {

/// The room roles the relay gives power to (its 39003): admins may do everything in the room,
/// moderators delete events and add or remove plain members. Other names are kept and listed.
/// Flotilla posts a space's general chat to the room "_", which no 9007 creates: it is the
/// community itself, always there, open to whoever may post in the community.
inline constexpr std::string_view general_room = "_";

inline constexpr std::string_view room_admin_role = "admin";
inline constexpr std::string_view room_moderator_role = "moderator";

/// Where someone stands in the room's community (NIP-43 roles); its owner and admins moderate
/// every room.
enum class community_standing { outsider, member, admin, owner };

struct room_member {
  bytes32 pubkey{};
  std::vector<std::string> roles;

  friend bool operator==(const room_member&, const room_member&) = default;
};

/// A room as the database holds it.
struct room_state {
  bool exists = false;
  std::string id;
  room_metadata meta;
  std::vector<room_member> members; ///< in the order they joined
  /// The pin list as a 9010 set it (its 39005 holds it; the database keeps no other copy, and
  /// only a plan of a 9010 fills it).
  std::vector<tag> pins;
};

[[nodiscard]] const room_member* find_member(const room_state& room, const bytes32& pubkey);

/// What a request may do, from what the database says about the people involved.
struct room_context {
  community_standing actor = community_standing::outsider;   ///< the request's author
  community_standing subject = community_standing::outsider; ///< the `p` (or the author)
  bool closed_community = false;
  bool code_valid = false; ///< join: its `code` names a stored invite of this room
};

enum class room_outcome {
  changed,
  already_member,   ///< join or put of a member with the same roles: `duplicate:`
  not_member,       ///< remove or leave of someone not in the room
  no_such_room,
  room_exists,      ///< create of an id in use
  not_allowed,      ///< the author's roles do not allow this
  not_in_community, ///< a closed community's rooms hold only its members
  invite_required,  ///< join of a closed room without a valid code
  nothing_to_do,    ///< an edit that changes nothing, a delete of nothing
  already_processed,///< this request event was applied before
  deleted,          ///< this request event was deleted (NIP-09, a 9005): not applied again
  vanished,         ///< its author asked to vanish (NIP-62) after signing it: never applied
  too_many_rooms,   ///< create past the rooms a community may have
  too_many_members, ///< a join or put past the members a room may have
  too_many_invites, ///< a 9009 past the codes a room may have
  banned,           ///< the author, or the user a join or put would add, is banned from the community
  archived,         ///< the community was archived while the request waited
  busy,             ///< the community's queue of room requests was full: not tried
  failed,
};

[[nodiscard]] std::string_view room_outcome_name(room_outcome outcome) noexcept;

/// Which relay-signed events of the room a change rewrites.
struct room_parts {
  bool metadata = false; ///< 39000
  bool admins = false;   ///< 39001
  bool members = false;  ///< 39002
  bool roles = false;    ///< 39003
  bool pins = false;     ///< 39005

  [[nodiscard]] bool any() const noexcept { return metadata || admins || members || roles || pins; }

  room_parts& operator|=(const room_parts& other) noexcept {
    metadata = metadata || other.metadata;
    admins = admins || other.admins;
    members = members || other.members;
    roles = roles || other.roles;
    pins = pins || other.pins;
    return *this;
  }
};

struct room_plan {
  room_outcome outcome = room_outcome::failed;
  room_state after;
  room_parts parts;
  bool deleted = false;        ///< delete_room: the room and its events go
  bool store_request = false;  ///< the accepted request event itself is stored
  /// The relay's own record of the change, naming the room and the subject: 9000 for a join,
  /// 9001 for a leave; 0 for none.
  std::uint32_t relay_signs = 0;
  bool store_invite = false;   ///< create_invite: its code is stored hashed
};

/// Someone's place in a room as far as its rules care (room_admin_role, room_moderator_role).
enum class room_rank : std::uint8_t { none, member, moderator, admin };

[[nodiscard]] room_rank rank_in(const room_member* member);

/// THE rule of who may take which room action (before looking at the subject): anyone joins and
/// leaves; community owner and admins do everything; room admins edit, delete and invite;
/// moderators also add and remove members, delete events and pin.
[[nodiscard]] bool room_action_allowed(room_action action, room_rank rank, community_standing actor);

/// Whether `actor` may take `request.action` in `room` (before looking at the subject).
[[nodiscard]] bool room_action_allowed(const room_state& room, const room_request& request,
                                       community_standing actor);

/// THE room rules: what `request` does to `before`, and which events that rewrites. A no-op
/// rewrites nothing.
[[nodiscard]] room_plan plan_room_change(const room_state& before, const room_request& request,
                                         const room_context& context);

/// Whether the planned change takes from someone the right to post in the room: they leave or
/// are removed from a room only members post in (restricted, or hidden: a hidden room holds its
/// writers to its members too), or it becomes one. Such a change waits for the community's
/// event batches in flight and holds the next ones back (storage/room_store.cpp apply_locked):
/// each read the room's writers before it, and would store a post by someone it removed after
/// it committed.
[[nodiscard]] bool takes_posting_away(const room_state& before, const room_plan& plan, room_action action);

/// Who reads what of a room: `private` rooms show non-members only their 39000 (and 39003),
/// `hidden` rooms nothing at all, and a stored 9009 (its code) shows only to room admins.
/// Community owner and admins read everything.
struct room_reader {
  bool member = false;   ///< in the room's 39002
  bool room_admin = false;
  bool community_admin = false; ///< owner or admin of the community
};

[[nodiscard]] bool room_event_visible(const room_flags& flags, std::uint32_t kind,
                                      const room_reader& reader);

/// A room as one reader sees it: its flags and the reader's standing in it.
struct room_view {
  room_flags flags;
  room_reader reader;
};

/// THE rule for an event naming rooms (rooms_of_event, rooms_of_rendered), used by REQ history
/// and live delivery: it shows only when every room it names shows it to the reader (an event
/// posted to a public and a private room is as private as the private one). `view_of(room)`
/// returns an optional room_view, nothing for a room this community does not have (which hides
/// nothing). COUNT's SQL (storage/filter_sql.cpp `hidden_rooms_sql`) applies the same rule to
/// the lists hide_room makes: a row is left out when any of its rooms hides it.
template <class ViewOf>
[[nodiscard]] bool event_visible(const std::vector<std::string>& rooms, std::uint32_t kind,
                                 ViewOf&& view_of) {
  for (const auto& room : rooms) {
    auto view = view_of(room);
    if (view && !room_event_visible(view->flags, kind, view->reader))
      return false;
  }
  return true;
}

/// What one reader may not see of a community's rooms, for answers the database computes
/// without rendering each event (COUNT, the rows a REQ's limit counts): the same rule as
/// room_event_visible, as room lists.
struct room_hiding {
  std::vector<std::string> unseen;       ///< no event of these rooms
  std::vector<std::string> state_only;   ///< only their group metadata (is_group_metadata_kind)
  std::vector<std::string> codes_hidden; ///< everything but their 9009
  std::vector<std::string> whole;        ///< nothing hidden: the reader is their or the community's admin
  /// The reader's hex pubkey, empty when anonymous: a 9000 or 9001 naming them shows to them
  /// whatever its room hides (shown_to_named).
  std::string reader;
  /// Set when the four lists name every room the reader's pod knows: a row naming a room in
  /// none of them (but the general room's) is of a room created on another pod and not loaded
  /// here yet, maybe private, and hidden but for its deletion (9008), as live delivery hides it.
  bool unknown_hidden = false;

  [[nodiscard]] bool empty() const noexcept {
    return unseen.empty() && state_only.empty() && codes_hidden.empty() && !unknown_hidden;
  }

  /// Every room the lists name.
  [[nodiscard]] std::vector<std::string> listed() const {
    std::vector<std::string> rooms = regular_hidden();
    rooms.insert(rooms.end(), codes_hidden.begin(), codes_hidden.end());
    rooms.insert(rooms.end(), whole.begin(), whole.end());
    return rooms;
  }

  /// The rooms whose regular events (a post, a comment) the reader may not see.
  [[nodiscard]] std::vector<std::string> regular_hidden() const {
    std::vector<std::string> rooms = unseen;
    rooms.insert(rooms.end(), state_only.begin(), state_only.end());
    return rooms;
  }

  friend bool operator==(const room_hiding&, const room_hiding&) = default;
};

/// Adds `room` to `hiding` as room_event_visible decides for `reader`.
void hide_room(room_hiding& hiding, const std::string& room, const room_flags& flags,
               const room_reader& reader);

/// Whether a request's own event is stored (and delivered) once applied. A join carrying an
/// invite code is not: every reader of the room would read the code in it, and a code admits
/// anyone who holds it (only room admins see the 9009 that made it).
[[nodiscard]] bool request_event_kept(const room_request& request);

/// Whether the author may post a regular event of `kind` to the room: in a `restricted` room only
/// its members (and community owner and admins) write, and in a room hidden from the author
/// (room_unseen) nobody. A reaction is not a post: anyone who reads the room may react (Flotilla
/// offers it on every message it shows). The batch's SQL holds hidden rooms as restricted ones.
[[nodiscard]] bool room_write_allowed(const room_flags& flags, std::uint32_t kind,
                                      const room_reader& author);

/// Whether `reader` may not even learn that the room exists: a hidden room, to anyone outside
/// it who is not the community's owner or an admin. Whatever they write naming it is answered
/// as if it named no room (connection::check_room_event, refuse_room_request, plan_room_change),
/// so guessing ids tells them nothing; only an open hidden room's join lets them in, by design.
[[nodiscard]] bool room_unseen(const room_flags& flags, const room_reader& reader);

/// Removes `pubkey` from the room; true when they were in it (their roles go with them).
bool remove_member(room_state& room, const bytes32& pubkey);

} // namespace comb::protocol
