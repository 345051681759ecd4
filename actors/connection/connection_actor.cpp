// SPDX-License-Identifier: MIT
#include "actors/connection/connection_actor.hpp"

#include "actors/clock.hpp"

#include <algorithm>
#include <chrono>

#include "actors/community/membership_requests.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/client_message.hpp"
#include "protocol/relay_message.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;

namespace {

using self_ptr = caf::stateful_actor<connection_state>*;


void send_frame(self_ptr self, std::string frame) {
  self->state.args.sink->send(std::move(frame));
}

void reply_to_rejected_frame(self_ptr self, const protocol::frame_rejection& r) {
  bump(self->state.args.metrics->messages_invalid);
  switch (r.reply) {
    case protocol::reply_kind::ok:
      bump(self->state.args.metrics->events_rejected);
      send_frame(self, protocol::render_ok(r.reference, false, r.why.text()));
      break;
    case protocol::reply_kind::closed:
      // A refused REQ ends the subscription of that id, if one was open: CLOSED means closed.
      if (self->state.logic->close_subscription(r.reference))
        self->send(self->state.args.fanout, unsubscribe_atom_v, self->state.args.owner,
                   self->state.args.policy.community_id, r.reference);
      send_frame(self, protocol::render_closed(r.reference, r.why.text()));
      break;
    case protocol::reply_kind::notice:
      send_frame(self, protocol::render_notice(r.why.text()));
      break;
  }
}

const caf::actor& reader_for(self_ptr self) {
  const auto& readers = self->state.args.readers;
  return readers[self->state.args.owner % readers.size()];
}

void request_membership_change(self_ptr self, const protocol::event& ev) {
  auto& st = self->state;
  auto command = membership_command_for(
    ev, {st.args.policy.closed_community, st.args.policy.host}, unix_now());
  if (!command || !st.args.community) {
    auto why = command ? protocol::rejection{protocol::reason::error, "membership is unavailable"}
                       : command.error();
    send_frame(self, protocol::render_ok(ev.id, false, why.text()));
    return;
  }
  std::uint64_t ticket = st.next_ticket++;
  st.awaiting_membership.emplace(ticket, std::pair{protocol::to_hex(ev.id), ev.kind});
  self->send(st.args.community, member_atom_v, ticket, std::move(command).value());
}

void on_member_done(self_ptr self, std::uint64_t ticket, const storage::membership_result& result) {
  auto& st = self->state;
  auto it = st.awaiting_membership.find(ticket);
  if (it == st.awaiting_membership.end())
    return;
  auto reply = reply_for(it->second.second, result.outcome, st.args.policy.relay_url);
  send_frame(self, protocol::render_ok(it->second.first, reply.accepted, reply.message));
  st.awaiting_membership.erase(it);
}

void on_event(self_ptr self, protocol::event_message& message) {
  auto& st = self->state;
  auto& metrics = *st.args.metrics;
  bump(metrics.messages_event);
  const protocol::event& ev = message.ev;
  if (auto refused = st.logic->admit_event(ev, unix_now(), monotonic_seconds())) {
    bump(metrics.events_rejected);
    send_frame(self, protocol::render_ok(ev.id, false, refused->text()));
    return;
  }
  bump(metrics.events_accepted);
  if (is_membership_request(ev.kind)) {
    request_membership_change(self, ev);
    return;
  }
  auto shared_event = std::make_shared<const protocol::event>(std::move(message.ev));
  auto json = std::make_shared<const std::string>(protocol::render_event_json(*shared_event));
  std::int64_t community = st.args.policy.community_id;
  if (protocol::classify(shared_event->kind) == protocol::kind_class::ephemeral) {
    committed_event accepted{community, {shared_event, json}};
    self->send(st.args.fanout, publish_atom_v, accepted);
    if (st.args.bridge)
      self->send(st.args.bridge, publish_atom_v, accepted);
    send_frame(self, protocol::render_ok(shared_event->id, true, ""));
    return;
  }
  std::uint64_t ticket = st.next_ticket++;
  st.awaiting_ok.emplace(ticket, protocol::to_hex(shared_event->id));
  st.logic->event_sent();
  self->send(st.args.writer, store_atom_v, ticket,
             storage::event_write{community, std::move(shared_event), std::move(json)});
}

bool asks_for_invite(const protocol::req_message& message) {
  for (const auto& f : message.filters)
    if (f.kinds && std::binary_search(f.kinds->begin(), f.kinds->end(), invite_kind))
      return true;
  return false;
}

void open_subscription(self_ptr self, protocol::req_message& message);

/// NIP-43: a REQ for kind 28935 mints an invite for an authenticated member allowed to invite;
/// the invite is sent first, then the REQ proceeds as usual (28935 is never stored).
void request_invite(self_ptr self, protocol::req_message& message) {
  auto& st = self->state;
  if (!st.logic->authenticated()) {
    send_frame(self, protocol::render_closed(message.subscription_id,
                                             "auth-required: authenticate to request an invite"));
    return;
  }
  std::uint64_t ticket = st.next_ticket++;
  self->send(st.args.membership_writer, mint_atom_v, ticket, st.args.policy.community_id,
             *st.logic->authenticated());
  st.awaiting_invite.emplace(ticket, std::move(message));
}

void on_minted(self_ptr self, std::uint64_t ticket, const invite_reply& reply) {
  auto& st = self->state;
  auto it = st.awaiting_invite.find(ticket);
  if (it == st.awaiting_invite.end())
    return;
  auto message = std::move(it->second);
  st.awaiting_invite.erase(it);
  if (!reply.event_json) {
    send_frame(self, protocol::render_closed(message.subscription_id, reply.refusal));
    return;
  }
  send_frame(self, protocol::render_event_frame(message.subscription_id, *reply.event_json));
  open_subscription(self, message);
}

void on_req(self_ptr self, protocol::req_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_req);
  if (auto refused = st.logic->may_read()) {
    send_frame(self, protocol::render_closed(message.subscription_id, refused->text()));
    return;
  }
  if (asks_for_invite(message) && st.args.membership_writer) {
    request_invite(self, message);
    return;
  }
  open_subscription(self, message);
}

void open_subscription(self_ptr self, protocol::req_message& message) {
  auto& st = self->state;
  auto generation = st.logic->open_subscription(message.subscription_id);
  if (!generation) {
    send_frame(self, protocol::render_closed(message.subscription_id, generation.error().text()));
    return;
  }
  st.req_started[message.subscription_id] = monotonic_seconds();
  self->send(st.args.fanout, subscribe_atom_v,
             live_request{self, st.args.owner, st.args.policy.community_id,
                          message.subscription_id, generation.value(), std::move(message.filters)});
}

void on_count(self_ptr self, protocol::count_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_count);
  if (auto refused = st.logic->may_read()) {
    send_frame(self, protocol::render_closed(message.subscription_id, refused->text()));
    return;
  }
  self->send(reader_for(self), count_atom_v,
             history_request{self, st.args.policy.community_id, message.subscription_id, 0,
                             std::move(message.filters)});
}

void on_close(self_ptr self, const protocol::close_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_close);
  if (st.logic->close_subscription(message.subscription_id))
    self->send(st.args.fanout, unsubscribe_atom_v, st.args.owner, st.args.policy.community_id,
               message.subscription_id);
}

void on_auth(self_ptr self, const protocol::auth_message& message) {
  bump(self->state.args.metrics->messages_auth);
  auto refused = self->state.logic->authenticate(message.ev, unix_now());
  send_frame(self, protocol::render_ok(message.ev.id, !refused, refused ? refused->text() : ""));
}

void on_frame(self_ptr self, const std::string& text) {
  auto parsed = protocol::parse_client_message(text, self->state.args.policy.limits);
  if (!parsed) {
    reply_to_rejected_frame(self, parsed.error());
    return;
  }
  std::visit(
    [self](auto& message) {
      using T = std::decay_t<decltype(message)>;
      if constexpr (std::is_same_v<T, protocol::event_message>)
        on_event(self, message);
      else if constexpr (std::is_same_v<T, protocol::req_message>)
        on_req(self, message);
      else if constexpr (std::is_same_v<T, protocol::count_message>)
        on_count(self, message);
      else if constexpr (std::is_same_v<T, protocol::close_message>)
        on_close(self, message);
      else
        on_auth(self, message);
    },
    parsed.value());
}

void on_stored(self_ptr self, std::uint64_t ticket, const storage::store_outcome& outcome) {
  auto& st = self->state;
  auto it = st.awaiting_ok.find(ticket);
  if (it == st.awaiting_ok.end())
    return;
  st.logic->event_answered();
  bool accepted = outcome.result == storage::store_outcome::status::stored
                  || outcome.result == storage::store_outcome::status::duplicate;
  send_frame(self, protocol::render_ok(it->second, accepted, outcome.message));
  st.awaiting_ok.erase(it);
}

void on_history(self_ptr self, const std::string& sub, std::uint64_t generation,
                const storage::query_result& result) {
  auto& st = self->state;
  if (!result.ok) {
    if (st.logic->close_subscription(sub)) {
      self->send(st.args.fanout, unsubscribe_atom_v, st.args.owner, st.args.policy.community_id, sub);
      send_frame(self, protocol::render_closed(sub, result.error));
    }
    return;
  }
  double now = monotonic_seconds();
  auto frames = st.logic->history_arrived(sub, generation, result.events, now);
  if (frames.empty())
    return;
  if (auto started = st.req_started.find(sub); started != st.req_started.end()) {
    st.args.metrics->req_latency.observe(now - started->second);
    st.req_started.erase(started);
  }
  for (auto& frame : frames)
    send_frame(self, std::move(frame));
}

/// Revocation: a closed community's member who lost membership loses every subscription now.
void on_revoke(self_ptr self, const pubkey_list& pubkeys) {
  auto& st = self->state;
  const auto& me = st.logic->authenticated();
  if (!me || std::find(pubkeys.begin(), pubkeys.end(), *me) == pubkeys.end()
      || !st.logic->lost_access())
    return;
  for (const auto& sub : st.logic->subscription_ids()) {
    st.logic->close_subscription(sub);
    send_frame(self, protocol::render_closed(sub, "restricted: you are no longer a member of this community"));
  }
  self->send(st.args.fanout, forget_atom_v, st.args.owner, st.args.policy.community_id);
}

/// The community was closed: anonymous and non-member connections end.
void on_access_changed(self_ptr self) {
  auto& st = self->state;
  if (!st.logic->must_leave())
    return;
  for (const auto& sub : st.logic->subscription_ids()) {
    st.logic->close_subscription(sub);
    send_frame(self, protocol::render_closed(sub, "restricted: this community is now closed to non-members"));
  }
  self->send(st.args.fanout, forget_atom_v, st.args.owner, st.args.policy.community_id);
  st.args.sink->close(close_reason::policy);
}

void on_deliver(self_ptr self, const live_event& event, const subscription_matches& subs) {
  for (const auto& sub : subs)
    if (auto frame = self->state.logic->live_arrived(sub.id, sub.generation, event, monotonic_seconds()))
      send_frame(self, std::move(*frame));
}

} // namespace

caf::behavior connection_actor(caf::stateful_actor<connection_state>* self, connection_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.logic.emplace(st.args.policy, st.args.challenge);
  send_frame(self, protocol::render_auth_challenge(st.args.challenge));
  return {
    [=](frame_atom, const std::string& text) {
      on_frame(self, text);
      if (auto& pending = self->state.args.frames_pending)
        pending->fetch_sub(1, std::memory_order_release);
    },
    [=](stored_atom, std::uint64_t ticket, const storage::store_outcome& outcome) {
      on_stored(self, ticket, outcome);
    },
    [=](history_atom, const std::string& sub, std::uint64_t generation,
        const storage::query_result& result) { on_history(self, sub, generation, result); },
    [=](counted_atom, const std::string& sub, const storage::count_result& result) {
      send_frame(self, result.ok ? protocol::render_count(sub, result.count)
                                 : protocol::render_closed(sub, result.error));
    },
    [=](deliver_atom, const live_event& event, const subscription_matches& subs) {
      on_deliver(self, event, subs);
    },
    [=](member_done_atom, std::uint64_t ticket, const storage::membership_result& result) {
      on_member_done(self, ticket, result);
    },
    [=](minted_atom, std::uint64_t ticket, const invite_reply& reply) { on_minted(self, ticket, reply); },
    [=](revoke_atom, std::int64_t, const pubkey_list& pubkeys) { on_revoke(self, pubkeys); },
    [=](access_atom, std::int64_t) { on_access_changed(self); },
    [=](hangup_atom) {
      auto& s = self->state;
      self->send(s.args.fanout, forget_atom_v, s.args.owner, s.args.policy.community_id);
      self->quit();
    },
  };
}

} // namespace comb::actors
