// SPDX-License-Identifier: MIT
#include "protocol/room_rules.hpp"

#include <algorithm>

namespace comb::protocol {
namespace {

bool has_role(const room_member* member, std::string_view role) {
  return member && std::find(member->roles.begin(), member->roles.end(), role) != member->roles.end();
}

bool community_manager(community_standing standing) {
  return standing == community_standing::owner || standing == community_standing::admin;
}

/// Community owner and admins, and the room's own admins.
bool room_admin(const room_state& room, const bytes32& pubkey, community_standing standing) {
  return community_manager(standing) || rank_in(find_member(room, pubkey)) == room_rank::admin;
}

room_plan outcome_only(room_outcome outcome) {
  room_plan plan;
  plan.outcome = outcome;
  return plan;
}

room_plan changed(room_state after) {
  room_plan plan;
  plan.outcome = room_outcome::changed;
  plan.after = std::move(after);
  plan.store_request = true;
  return plan;
}

room_plan create(const room_request& request) {
  room_state room;
  room.exists = true;
  room.id = request.room;
  room.meta.name = request.room;
  // A 9007 carries no flags; apps send the room's in a 9002 right after (Flotilla's RoomForm:
  // create, then edit). Until then the room is locked, so that nobody watching for new 39000s
  // joins, reads or posts in the moment before it becomes private or closed.
  room.meta.flags = {true, true, true, true};
  room.members.push_back({request.author, {std::string(room_admin_role)}});
  auto plan = changed(std::move(room));
  plan.parts = {true, true, true, true};
  return plan;
}

/// A newcomer sees none of the state signed before they came that their room hid from them: a
/// hidden room's 39000, 39001 and 39003, a private room's 39001 (39002 is signed again for every
/// change of members). Apps list rooms by their 39000 and load it with a `since`, so that state
/// is signed again, newer, for them. (A 39005 is signed only from its 9010: pins are not kept.)
void show_state_to_newcomer(room_plan& plan, const room_flags& flags) {
  plan.parts.metadata = plan.parts.metadata || flags.hidden;
  plan.parts.roles = plan.parts.roles || flags.hidden;
  plan.parts.admins = plan.parts.admins || flags.hidden || flags.is_private;
}

room_plan put_user(const room_state& before, const room_request& request,
                   const room_context& context) {
  // Granting roles is for admins; moderators add plain members.
  if (!request.roles.empty() && !room_admin(before, request.author, context.actor))
    return outcome_only(room_outcome::not_allowed);
  if (context.closed_community && context.subject == community_standing::outsider)
    return outcome_only(room_outcome::not_in_community);
  const room_member* existing = find_member(before, request.subject);
  if (existing && (request.roles.empty() || request.roles == existing->roles))
    return outcome_only(room_outcome::already_member);
  auto plan = changed(before);
  if (existing) {
    std::find_if(plan.after.members.begin(), plan.after.members.end(), [&](const auto& m) {
      return m.pubkey == request.subject;
    })->roles = request.roles;
    plan.parts.admins = true;
    return plan;
  }
  plan.after.members.push_back({request.subject, request.roles});
  plan.parts.members = true;
  plan.parts.admins = !request.roles.empty();
  show_state_to_newcomer(plan, before.meta.flags);
  return plan;
}

room_plan remove_user(const room_state& before, const room_request& request,
                      const room_context& context) {
  const room_member* existing = find_member(before, request.subject);
  if (!existing)
    return outcome_only(room_outcome::not_member);
  // A moderator removes plain members and moderators, never an admin.
  if (has_role(existing, room_admin_role) && !room_admin(before, request.author, context.actor))
    return outcome_only(room_outcome::not_allowed);
  auto plan = changed(before);
  plan.parts.members = true;
  plan.parts.admins = !existing->roles.empty();
  remove_member(plan.after, request.subject);
  return plan;
}

room_plan edit_metadata(const room_state& before, const room_request& request) {
  room_metadata meta = before.meta;
  if (request.name)
    meta.name = *request.name;
  if (request.about)
    meta.about = *request.about;
  if (request.picture)
    meta.picture = *request.picture;
  meta.flags = request.flags;
  if (meta == before.meta)
    return outcome_only(room_outcome::nothing_to_do);
  auto plan = changed(before);
  plan.after.meta = std::move(meta);
  plan.parts.metadata = true;
  return plan;
}

room_plan join(const room_state& before, const room_request& request, const room_context& context) {
  if (find_member(before, request.subject))
    return outcome_only(room_outcome::already_member);
  if (context.closed_community && context.subject == community_standing::outsider)
    return outcome_only(room_outcome::not_in_community);
  // The community's owner and admins may already add themselves with a 9000; Flotilla's room
  // form sends a join after every edit, so refusing theirs would fail each admin's edit.
  if (before.meta.flags.closed && !context.code_valid && !community_manager(context.subject))
    return outcome_only(room_outcome::invite_required);
  auto plan = changed(before);
  plan.after.members.push_back({request.subject, {}});
  plan.parts.members = true;
  // NIP-29: a join is answered by the relay's 9000, as a leave by its 9001 (Flotilla shows
  // "joined the room" from it, and watches for it to learn the user is in).
  plan.relay_signs = room_put_user_kind;
  show_state_to_newcomer(plan, before.meta.flags);
  return plan;
}

room_plan leave(const room_state& before, const room_request& request) {
  const room_member* existing = find_member(before, request.subject);
  if (!existing)
    return outcome_only(room_outcome::not_member);
  auto plan = changed(before);
  plan.parts.members = true;
  plan.parts.admins = !existing->roles.empty();
  plan.relay_signs = room_remove_user_kind;
  remove_member(plan.after, request.subject);
  return plan;
}

} // namespace

const room_member* find_member(const room_state& room, const bytes32& pubkey) {
  auto it = std::find_if(room.members.begin(), room.members.end(),
                         [&](const room_member& m) { return m.pubkey == pubkey; });
  return it == room.members.end() ? nullptr : &*it;
}

bool remove_member(room_state& room, const bytes32& pubkey) {
  return std::erase_if(room.members, [&](const room_member& m) { return m.pubkey == pubkey; }) > 0;
}

std::string_view room_outcome_name(room_outcome outcome) noexcept {
  switch (outcome) {
    case room_outcome::changed: return "changed";
    case room_outcome::already_member: return "already_member";
    case room_outcome::not_member: return "not_member";
    case room_outcome::no_such_room: return "no_such_room";
    case room_outcome::room_exists: return "room_exists";
    case room_outcome::not_allowed: return "not_allowed";
    case room_outcome::not_in_community: return "not_in_community";
    case room_outcome::invite_required: return "invite_required";
    case room_outcome::nothing_to_do: return "nothing_to_do";
    case room_outcome::already_processed: return "already_processed";
    case room_outcome::deleted: return "deleted";
    case room_outcome::vanished: return "vanished";
    case room_outcome::too_many_rooms: return "too_many_rooms";
    case room_outcome::too_many_members: return "too_many_members";
    case room_outcome::too_many_invites: return "too_many_invites";
    case room_outcome::banned: return "banned";
    case room_outcome::archived: return "archived";
    case room_outcome::busy: return "busy";
    case room_outcome::failed: return "failed";
  }
  return "failed";
}

room_rank rank_in(const room_member* member) {
  if (!member)
    return room_rank::none;
  if (has_role(member, room_admin_role))
    return room_rank::admin;
  return has_role(member, room_moderator_role) ? room_rank::moderator : room_rank::member;
}

bool room_action_allowed(room_action action, room_rank rank, community_standing actor) {
  if (action == room_action::join || action == room_action::leave)
    return true;
  if (community_manager(actor))
    return true;
  switch (action) {
    case room_action::put_user:
    case room_action::remove_user:
    case room_action::delete_event:
    case room_action::update_pins:
      return rank >= room_rank::moderator;
    case room_action::edit_metadata:
    case room_action::delete_room:
    case room_action::create_invite:
      return rank == room_rank::admin;
    default: // create_room: the community's owner and admins only
      return false;
  }
}

bool room_action_allowed(const room_state& room, const room_request& request,
                         community_standing actor) {
  return room_action_allowed(request.action, rank_in(find_member(room, request.author)), actor);
}

namespace {

/// A request naming a room hidden from its author, answered as one naming no room would be: a
/// leave by someone not in it, a join refused, anything else.
room_plan as_if_no_room(const room_state& before, const room_request& request, const room_context& context) {
  if (request.action == room_action::leave)
    return outcome_only(room_outcome::not_member);
  if (request.action != room_action::join)
    return outcome_only(room_outcome::no_such_room);
  auto plan = join(before, request, context);
  if (plan.outcome == room_outcome::not_in_community || plan.outcome == room_outcome::invite_required)
    return outcome_only(room_outcome::no_such_room);
  return plan;
}

} // namespace

room_plan plan_room_change(const room_state& before, const room_request& request,
                           const room_context& context) {
  const bool unseen = before.exists
                      && room_unseen(before.meta.flags, {find_member(before, request.author) != nullptr, false,
                                                         community_manager(context.actor)});
  if (request.action == room_action::create_room) {
    if (before.exists && !unseen)
      return outcome_only(room_outcome::room_exists);
    if (unseen || !room_action_allowed(before, request, context.actor))
      return outcome_only(room_outcome::not_allowed);
    return create(request);
  }
  if (!before.exists)
    return outcome_only(room_outcome::no_such_room);
  if (unseen)
    return as_if_no_room(before, request, context);
  if (!room_action_allowed(before, request, context.actor))
    return outcome_only(room_outcome::not_allowed);
  switch (request.action) {
    case room_action::put_user: return put_user(before, request, context);
    case room_action::remove_user: return remove_user(before, request, context);
    case room_action::edit_metadata: return edit_metadata(before, request);
    case room_action::join: return join(before, request, context);
    case room_action::leave: return leave(before, request);
    case room_action::delete_room: {
      auto plan = changed(before);
      plan.deleted = true;
      return plan;
    }
    case room_action::create_invite: {
      auto plan = changed(before);
      plan.store_invite = true;
      return plan;
    }
    case room_action::update_pins: {
      auto plan = changed(before);
      plan.after.pins = request.pins;
      plan.parts.pins = true;
      return plan;
    }
    default: // delete_event: the request is stored, the events it names are deleted
      return changed(before);
  }
}

bool room_event_visible(const room_flags& flags, std::uint32_t kind, const room_reader& reader) {
  if (reader.community_admin || reader.room_admin)
    return true;
  if (kind == room_create_invite_kind) // carries the invite code
    return false;
  if (reader.member)
    return true;
  if (flags.hidden)
    return false;
  if (flags.is_private)
    return is_group_metadata_kind(kind);
  return true;
}

void hide_room(room_hiding& hiding, const std::string& room, const room_flags& flags,
               const room_reader& reader) {
  if (reader.community_admin || reader.room_admin)
    hiding.whole.push_back(room);
  else if (reader.member)
    hiding.codes_hidden.push_back(room);
  else if (flags.hidden)
    hiding.unseen.push_back(room);
  else if (flags.is_private)
    hiding.state_only.push_back(room);
  else
    hiding.codes_hidden.push_back(room);
}

bool request_event_kept(const room_request& request) {
  return !(request.action == room_action::join && !request.code.empty());
}

bool room_unseen(const room_flags& flags, const room_reader& reader) {
  return flags.hidden && !reader.member && !reader.room_admin && !reader.community_admin;
}

bool room_write_allowed(const room_flags& flags, std::uint32_t kind, const room_reader& author) {
  if (room_unseen(flags, author))
    return false;
  if (!flags.restricted || author.member || author.community_admin)
    return true;
  return kind == reaction_kind && room_event_visible(flags, kind, author);
}

bool takes_posting_away(const room_state& before, const room_plan& plan, room_action action) {
  if (plan.outcome != room_outcome::changed)
    return false;
  const auto& was = before.meta.flags;
  const auto& now = plan.after.meta.flags;
  const bool members_only = now.restricted || now.hidden; // anyone posts in another room
  if (action == room_action::remove_user || action == room_action::leave)
    return members_only;
  return action == room_action::edit_metadata && members_only && !(was.restricted || was.hidden);
}

} // namespace comb::protocol
