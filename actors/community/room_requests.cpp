// SPDX-License-Identifier: MIT
#include "actors/community/room_requests.hpp"

#include <string>

#include "protocol/room.hpp"
#include "storage/room_store.hpp"

namespace comb::actors {

membership_reply room_reply_for(std::uint32_t kind, protocol::room_outcome outcome) {
  using o = protocol::room_outcome;
  switch (outcome) {
    case o::changed:
      return {true, kind == protocol::room_join_kind    ? "info: welcome to the room"
                    : kind == protocol::room_leave_kind ? "info: you have left the room"
                                                        : ""};
    // NIP-29 refuses a join by a member; a put of a member is already done, and Flotilla's
    // member dialog shows any refusal as an error although the other puts succeeded.
    case o::already_member:
      if (kind == protocol::room_join_kind)
        return {false, "duplicate: you are already a member of this room"};
      return {true, "duplicate: already a member with these roles"};
    case o::already_processed: return {true, "duplicate: this request was already processed"};
    case o::deleted: return {false, "blocked: this request was deleted"};
    case o::vanished:
      return {false, "blocked: the author of this request asked this relay to delete their events"};
    case o::nothing_to_do: return {true, "duplicate: nothing to change"};
    // A leave by someone not in the room leaves things as asked: Flotilla's "Access Pending"
    // sends one, shows any refusal but `duplicate:` as an error and keeps its state.
    case o::not_member:
      if (kind == protocol::room_leave_kind)
        return {true, "duplicate: you are not a member of this room"};
      return {false, "invalid: not a member of this room"};
    // A leave of a room that does not exist (or is hidden from its author) leaves things as
    // asked, as one of a room its author is not in.
    case o::no_such_room:
      if (kind == protocol::room_leave_kind)
        return {true, "duplicate: you are not a member of this room"};
      return {false, "invalid: there is no such room in this community"};
    // Flotilla's room form sends a create before every edit and goes on only when the refusal
    // says "already".
    case o::room_exists: return {false, "duplicate: a room with this id already exists"};
    case o::not_allowed: return {false, "restricted: your role does not allow this in this room"};
    case o::not_in_community:
      return {false, "restricted: only members of this community can be in its rooms"};
    case o::invite_required:
      return {false, "restricted: this room is closed; a valid invite code is required"};
    case o::too_many_rooms:
      return {false, "restricted: this community has the most rooms it may have ("
                       + std::to_string(storage::max_rooms_per_community) + ")"};
    case o::too_many_members:
      return {false, "restricted: this room has the most members it may have ("
                       + std::to_string(storage::max_members_per_room) + ")"};
    case o::too_many_invites:
      return {false, "restricted: this room has the most invite codes it may have ("
                       + std::to_string(storage::max_invites_per_room) + ")"};
    case o::banned: return {false, "blocked: a banned user cannot be in this community's rooms"};
    case o::archived: return {false, "restricted: this community is archived"};
    case o::busy:
      return {false, "rate-limited: this community has too many room requests waiting; retry"};
    case o::failed: break;
  }
  return {false, "error: could not update the room, please retry"};
}

} // namespace comb::actors
