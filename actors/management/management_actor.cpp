// SPDX-License-Identifier: MIT
#include "actors/management/management_actor.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <variant>

#include "actors/clock.hpp"
#include "actors/messages.hpp"
#include "protocol/nip98.hpp"
#include "storage/room_store.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<management_state>*;
using protocol::management_method;

/// A call that passed every check and may run.
struct admitted_call {
  protocol::management_request request;
  protocol::bytes32 caller{};
};

void answer(self_ptr self, std::optional<management_method> method,
            const management_callback& reply, management_reply result) {
  if (auto& metrics = self->state.args.metrics)
    count_management_call(*metrics, method, result.outcome);
  if (reply)
    reply(std::move(result));
}

/// 403: the caller is not the owner or an admin; also when its role, read again under the
/// community row lock, was gone by the time its change could be made (a demotion committed while
/// the call waited).
management_reply no_longer_manager() {
  return management_refusal(403, management_outcome::forbidden,
                            "only the community's owner or an admin may manage it");
}

management_reply community_archived() {
  return management_reply_for(storage::membership_outcome::archived);
}

management_reply database_trouble() {
  return management_refusal(503, management_outcome::failed,
                            "the database is unavailable, please retry");
}

/// The checks in the order NIP-86 clients expect them: shape of the request, NIP-98 (401),
/// the caller's role (403), the auth event not used before (401), then the params (200).
/// A read (supportedmethods, list* but listclaims) may use its auth event again within the event's window:
/// apps ask the same list twice in one second (Flotilla's banned list), which is one event id,
/// and the event's payload hash binds it to that exact body, so no change can ride on it.
std::variant<admitted_call, management_reply> admit(self_ptr self, const management_call& call) {
  auto& st = self->state;
  auto now = unix_now();
  auto checked = check_call_auth(call, now);
  if (auto* refused = std::get_if<management_reply>(&checked))
    return std::move(*refused);
  const auto* auth = &std::get<protocol::event>(checked);
  // The role before the auth event is spent: anyone can sign a fresh event, and a stranger's
  // must not cost the pod a write (the role is checked again where a change is made).
  auto manager = storage::is_manager(*st.connection, call.community_id, auth->pubkey);
  if (!manager)
    return database_trouble();
  if (!*manager)
    return refusal_to_non_manager(call.body);
  auto request = protocol::parse_management_request(call.body);
  if (!request || !protocol::may_reuse_auth(request.value().method)) {
    auto fresh = st.store->spend_http_auth(auth->id, auth->created_at + management_auth_window_seconds, now);
    if (!fresh)
      return database_trouble();
    if (!*fresh)
      return management_refusal(401, management_outcome::unauthorized, "auth event already used");
  }
  if (!request)
    return management_refusal(request.error().malformed ? 400 : 200, management_outcome::error,
                              request.error().message);
  return admitted_call{std::move(request).value(), auth->pubkey};
}

management_reply list_members(self_ptr self, std::int64_t community_id) {
  auto members = storage::load_members(*self->state.connection, community_id);
  if (!members)
    return database_trouble();
  std::vector<protocol::management_entry> entries;
  for (const auto& m : *members)
    entries.push_back({m.pubkey, m.role == storage::member_role::member
                                   ? std::string() : std::string(storage::role_name(m.role))});
  return management_success(protocol::render_management_entries(entries, "pubkey"));
}

/// `listmethodassignees`: the owner and the admins, who hold every method.
management_reply list_method_assignees(self_ptr self, std::int64_t community_id) {
  auto members = storage::load_members(*self->state.connection, community_id);
  if (!members)
    return database_trouble();
  std::vector<protocol::bytes32> managers;
  for (const auto& m : *members)
    if (storage::manages(m.role))
      managers.push_back(m.pubkey);
  return management_success(protocol::render_method_assignees(managers));
}

/// comb's NIP-86 extension: `listrooms` -> [{"id", "name", "flags": [...], "members": n}].
management_reply list_rooms(self_ptr self, std::int64_t community_id) {
  auto rooms = storage::load_rooms(*self->state.connection, community_id);
  if (!rooms)
    return database_trouble();
  boost::json::array out;
  for (const auto& room : *rooms) {
    boost::json::array flags;
    const auto& f = room.meta.flags;
    for (auto [on, name] : {std::pair{f.is_private, "private"}, {f.restricted, "restricted"},
                            {f.hidden, "hidden"}, {f.closed, "closed"}})
      if (on)
        flags.emplace_back(name);
    out.push_back({{"id", room.id}, {"name", room.meta.name}, {"flags", std::move(flags)},
                   {"members", room.members.size()}});
  }
  return management_success(boost::json::serialize(out));
}

/// `listroommembers [room id]` -> [{"pubkey", "roles": [...]}] in the order they joined.
management_reply list_room_members(self_ptr self, std::int64_t community_id, const std::string& id) {
  auto rooms = storage::load_rooms(*self->state.connection, community_id);
  if (!rooms)
    return database_trouble();
  auto room = std::find_if(rooms->begin(), rooms->end(), [&](const auto& r) { return r.id == id; });
  if (room == rooms->end())
    return management_refusal(200, management_outcome::error, "no such room in this community");
  boost::json::array out;
  for (const auto& member : room->members) {
    boost::json::array roles;
    for (const auto& role : member.roles)
      roles.emplace_back(role);
    out.push_back({{"pubkey", protocol::to_hex(member.pubkey)}, {"roles", std::move(roles)}});
  }
  return management_success(boost::json::serialize(out));
}

management_reply list_bans(self_ptr self, std::int64_t community_id, management_method method) {
  auto bans = storage::load_bans(*self->state.connection, community_id);
  if (!bans)
    return database_trouble();
  bool events = method == management_method::list_banned_events;
  std::vector<protocol::management_entry> entries;
  for (const auto& ban : events ? bans->events : bans->pubkeys)
    entries.push_back({ban.key, ban.reason});
  return management_success(protocol::render_management_entries(entries, events ? "id" : "pubkey"));
}

management_reply change_event_ban(self_ptr self, std::int64_t community_id,
                                  const admitted_call& call) {
  auto& st = self->state;
  bool ban = call.request.method == management_method::ban_event;
  auto result = ban ? st.store->ban_event(community_id, *call.request.target, call.request.text,
                                          call.caller, call.caller)
                    : st.store->allow_event(community_id, *call.request.target, call.caller);
  if (result == storage::management_result::failed)
    return database_trouble();
  if (result == storage::management_result::forbidden)
    return no_longer_manager();
  if (result == storage::management_result::archived)
    return community_archived();
  if (result == storage::management_result::owner_held)
    return management_refusal(403, management_outcome::forbidden,
                              ban ? "your role does not allow this (only the owner bans the owner's events)"
                                  : "your role does not allow this (only the owner lifts the owner's and the operator's bans)");
  if (result == storage::management_result::refused)
    return management_refusal(200, management_outcome::error,
                              "the relay's own membership events cannot be banned");
  if (result == storage::management_result::full)
    return management_refusal(200, management_outcome::error,
                              "this community has the most event bans it may hold ("
                                + std::to_string(storage::max_banned_events) + "); lift some first");
  // Into this pod's ban list before the reply, not by a message to the community actor: a
  // client that sends the event again once it has the answer must meet the new state.
  if (auto handle = st.args.registry ? st.args.registry->find(community_id) : std::nullopt)
    if (handle->bans)
      handle->bans->set_event(*call.request.target, ban, st.store->last_version());
  return management_success("true");
}

management_reply change_info(self_ptr self, std::int64_t community_id,
                             const admitted_call& call) {
  auto& st = self->state;
  const auto& request = call.request;
  storage::community_info_update update;
  update.requested_by = call.caller;
  if (request.method == management_method::change_relay_name)
    update.name = request.text;
  else if (request.method == management_method::change_relay_description)
    update.description = request.text;
  else
    update.icon = request.text;
  auto result = st.communities->set_info(community_id, update);
  if (result == storage::lifecycle_result::failed)
    return database_trouble();
  if (result == storage::lifecycle_result::forbidden)
    return no_longer_manager();
  if (result == storage::lifecycle_result::archived)
    return community_archived();
  if (st.args.directory_cache)
    st.args.directory_cache->forget_community(community_id); // this pod's NIP-11 shows it at once
  return management_success("true");
}

/// `createclaim`: the caller's own code, stored as a minted invite is (hashed, bounded, valid
/// while its creator may invite) and kept for listclaims.
management_reply create_claim(self_ptr self, std::int64_t community_id, const admitted_call& call) {
  auto& st = self->state;
  if (st.members->create_claim(community_id, call.caller, call.request.text, st.args.invite_max_uses,
                               st.args.invite_ttl_seconds, unix_now()))
    return management_success("true");
  if (!st.members->last_error().empty())
    return database_trouble();
  switch (st.members->last_invite_refusal()) {
    case storage::invite_refusal::taken:
      return management_refusal(200, management_outcome::error,
                                "this invite code is taken; choose another");
    case storage::invite_refusal::archived:
      return community_archived();
    case storage::invite_refusal::too_many:
      return management_refusal(200, management_outcome::error,
                                "you made " + std::to_string(storage::max_open_invites_per_user)
                                  + " invites in the last day that are still open; wait for some to be used or expire");
    default: return no_longer_manager();
  }
}

/// `listclaims`: the open codes made with createclaim, as strings (apps put the first in their
/// invite links); minted codes are stored hashed and cannot be shown.
management_reply list_claims(self_ptr self, std::int64_t community_id) {
  auto claims = self->state.members->open_claims(community_id, unix_now());
  if (!claims)
    return database_trouble();
  boost::json::array out;
  for (auto& claim : *claims)
    out.emplace_back(claim);
  return management_success(boost::json::serialize(out));
}

/// `deleteclaim`: deletes the code, minted or chosen; an admin's not the owner's nor the
/// operator's, as with bans.
management_reply delete_claim(self_ptr self, std::int64_t community_id, const admitted_call& call) {
  switch (self->state.invites->delete_code(community_id, call.request.text, *self->state.args.relay_key,
                                           call.caller)) {
    case storage::code_deletion::deleted: return management_success("true");
    case storage::code_deletion::not_allowed:
      return management_refusal(403, management_outcome::forbidden,
                                "your role does not allow this (only the owner deletes the owner's and the operator's invite codes)");
    case storage::code_deletion::not_found:
      return management_refusal(200, management_outcome::error, "no such invite code");
    case storage::code_deletion::not_manager: return no_longer_manager();
    default: return database_trouble();
  }
}

/// Sends a member or pubkey-ban method to the community actor; the answer comes with its
/// membership write (member_done_atom), or not at all (overdue_atom).
void request_membership(self_ptr self, std::int64_t community_id, storage::membership_command command,
                        management_method method, management_callback reply) {
  auto& st = self->state;
  auto handle = st.args.registry ? st.args.registry->find(community_id) : std::nullopt;
  if (!handle) {
    answer(self, method, reply, database_trouble());
    return;
  }
  auto ticket = st.next_ticket++;
  st.pending.emplace(ticket, pending_call{std::move(reply), method});
  self->send(handle->actor, member_atom_v, ticket, std::move(command));
  self->delayed_send(self, st.args.timeout, overdue_atom_v, ticket);
}

/// Whether `pubkey` is one of the relay's own keys in the community (on a database error, no:
/// the membership rules refuse the ban then).
bool signs_for(self_ptr self, std::int64_t community, const std::optional<protocol::bytes32>& pubkey) {
  return pubkey && self->state.store->signs_for(community, *pubkey).value_or(false);
}

void run(self_ptr self, const management_call& call, admitted_call admitted,
         management_callback reply) {
  auto method = admitted.request.method;
  auto community = call.community_id;
  // The community's key signs its lists and room state: a ban of it would hide them. The
  // membership rules refuse it too; here it gets a reply that says why.
  if (method == management_method::ban_pubkey && signs_for(self, community, admitted.request.target)) {
    answer(self, method, reply,
           management_refusal(200, management_outcome::error, "the key that signs this community's lists cannot be banned"));
    return;
  }
  if (method == management_method::ban_pubkey) {
    auto full = self->state.store->pubkey_bans_full(community);
    if (!full || *full) {
      answer(self, method, reply,
             !full ? database_trouble()
                   : management_refusal(200, management_outcome::error,
                                        "this community has the most pubkey bans it may hold ("
                                          + std::to_string(storage::max_banned_pubkeys) + "); lift some first"));
      return;
    }
  }
  if (auto command = membership_command_for(admitted.request, admitted.caller)) {
    request_membership(self, community, std::move(*command), method, std::move(reply));
    return;
  }
  management_reply result;
  switch (method) {
    case management_method::supported_methods:
      result = management_success(protocol::render_supported_methods());
      break;
    case management_method::list_allowed_pubkeys: result = list_members(self, community); break;
    case management_method::list_banned_pubkeys:
    case management_method::list_banned_events: result = list_bans(self, community, method); break;
    case management_method::ban_event:
    case management_method::allow_event: result = change_event_ban(self, community, admitted); break;
    case management_method::list_rooms: result = list_rooms(self, community); break;
    case management_method::list_room_members:
      result = list_room_members(self, community, admitted.request.text);
      break;
    case management_method::list_claims: result = list_claims(self, community); break;
    case management_method::create_claim: result = create_claim(self, community, admitted); break;
    case management_method::delete_claim: result = delete_claim(self, community, admitted); break;
    case management_method::list_method_assignees: result = list_method_assignees(self, community); break;
    default: result = change_info(self, community, admitted); break;
  }
  answer(self, method, reply, std::move(result));
}

void on_call(self_ptr self, const management_call& call, const management_callback& reply) {
  auto admitted = admit(self, call);
  if (auto* refused = std::get_if<management_reply>(&admitted)) {
    auto named = protocol::parse_management_request(call.body);
    answer(self, named ? std::optional(named->method) : std::nullopt, reply, std::move(*refused));
    return;
  }
  run(self, call, std::move(std::get<admitted_call>(admitted)), reply);
}

/// The call waiting for `ticket`, removed: whichever of its outcome and its deadline comes
/// first answers it; the other finds nothing.
std::optional<pending_call> take_pending(self_ptr self, std::uint64_t ticket) {
  auto node = self->state.pending.extract(ticket);
  if (node.empty())
    return std::nullopt;
  return std::move(node.mapped());
}

void on_member_done(self_ptr self, std::uint64_t ticket, const storage::membership_result& result) {
  if (auto call = take_pending(self, ticket))
    answer(self, call->method, call->reply, management_reply_for(result.outcome));
}

/// The change still waits in the community's queue and may yet be made: the answer says so,
/// rather than that it failed (a retry of the same change is answered `true` either way).
void on_overdue(self_ptr self, std::uint64_t ticket) {
  if (auto call = take_pending(self, ticket))
    answer(self, call->method, call->reply,
           management_refusal(503, management_outcome::failed,
                              "membership is busy: the change is still queued and may yet be made;"
                              " check before retrying"));
}

} // namespace

caf::behavior management_actor(caf::stateful_actor<management_state>* self, management_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.connection = std::make_unique<storage::pg_connection>(st.args.database_url);
  st.store = std::make_unique<storage::management_store>(*st.connection, *st.args.relay_key);
  st.communities = std::make_unique<storage::community_store>(*st.connection);
  st.members = std::make_unique<storage::membership_store>(*st.connection, *st.args.relay_key);
  st.invites = std::make_unique<storage::invite_store>(*st.connection);
  return {
    [=](manage_atom, const management_call& call, const management_callback& reply) {
      on_call(self, call, reply);
    },
    [=](member_done_atom, std::uint64_t ticket, const storage::membership_result& result) {
      on_member_done(self, ticket, result);
    },
    [=](overdue_atom, std::uint64_t ticket) { on_overdue(self, ticket); },
  };
}

} // namespace comb::actors
