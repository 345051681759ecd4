// SPDX-License-Identifier: MIT
#include "actors/connection/connection_actor.hpp"

#include "actors/clock.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <boost/container/small_vector.hpp>
#include <spdlog/spdlog.h>

#include "actors/community/membership_queue.hpp"
#include "actors/community/membership_requests.hpp"
#include "actors/community/room_queue.hpp"
#include "actors/community/room_requests.hpp"
#include "actors/connection/connection_drain.hpp"
#include "actors/connection/count_requests.hpp"
#include "actors/connection/frame_charges.hpp"
#include "actors/connection/query_replies.hpp"
#include "actors/connection/subscription_requests.hpp"
#include "actors/connection/waiting_queries.hpp"
#include "actors/vital_watch.hpp"
#include "protocol/room.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/client_message.hpp"
#include "protocol/nip62.hpp"
#include "protocol/relay_message.hpp"
#include "storage/event_rows.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;

namespace {

using self_ptr = connection_self;

/// Membership and room requests wait on the community actor: as many as events may wait on
/// storage, no more, and only a few joins and leaves of each kind, which a connection makes for
/// its own key; each takes one from its address's request bucket. Past that, the request is
/// refused (true).
bool refused_before_queue(self_ptr self, const protocol::event& ev, connection_state::own_lane lane) {
  auto& st = self->state;
  auto own = std::count_if(st.awaiting_membership.begin(), st.awaiting_membership.end(),
                           [&](const auto& waiting) { return waiting.second.lane == lane; });
  const bool places_left =
    st.awaiting_membership.size() < st.args.policy.max_events_in_flight
    && (lane == connection_state::own_lane::none || static_cast<std::size_t>(own) < max_waiting_self_requests);
  if (!places_left) {
    bump(st.args.metrics->events_rejected);
    send_frame(self, protocol::render_ok(ev.id, false, "rate-limited: too many membership requests awaiting an answer"));
    return true;
  }
  auto over_rate = st.logic->charge_store_request(monotonic_seconds());
  if (!over_rate)
    return false;
  bump(st.args.metrics->events_rejected);
  bump(st.args.metrics->store_requests_rate_limited);
  send_frame(self, protocol::render_ok(ev.id, false, over_rate->text()));
  return true;
}

void request_membership_change(self_ptr self, const protocol::event& ev) {
  auto& st = self->state;
  // The community's access now (the database's word, in the member cache), not at connect: a
  // join without a code must not pass in a community closed since.
  auto command = membership_command_for(
    ev, {st.logic->closed_community(), st.args.policy.host, st.logic->known_member(ev.pubkey),
         st.logic->may_manage(ev.pubkey)},
    unix_now());
  if (!command || !st.args.community) {
    auto why = command ? protocol::rejection{protocol::reason::error, "membership is unavailable"}
                       : command.error();
    bump(st.args.metrics->events_rejected);
    send_frame(self, protocol::render_ok(ev.id, false, why.text()));
    return;
  }
  // A 9031 naming its sender is a leave: bounded as one, as the community's queue counts it.
  const auto lane = is_self_request(command.value()) ? connection_state::own_lane::community
                                                      : connection_state::own_lane::none;
  if (refused_before_queue(self, ev, lane))
    return;
  bump(st.args.metrics->events_accepted);
  std::uint64_t ticket = st.next_ticket++;
  st.awaiting_membership.emplace(ticket,
                                 connection_state::awaiting_request{protocol::to_hex(ev.id), ev.kind, lane});
  self->send(st.args.community, member_atom_v, ticket, std::move(command).value());
}

void on_member_done(self_ptr self, std::uint64_t ticket, const storage::membership_result& result) {
  auto& st = self->state;
  auto it = st.awaiting_membership.find(ticket);
  if (it == st.awaiting_membership.end())
    return;
  auto reply = reply_for(it->second.kind, result.outcome, st.args.policy.relay_url);
  send_frame(self, protocol::render_ok(it->second.id, reply.accepted, reply.message));
  st.awaiting_membership.erase(it);
}

/// NIP-29: a room request goes to the community actor, which applies it in a transaction with
/// the other requests of its room then waiting (the room rules decide there, on the database's
/// roles) and answers with the outcome.
void request_room_change(self_ptr self, const protocol::event& ev) {
  auto& st = self->state;
  auto request = protocol::parse_room_request(ev);
  if (!request || !st.args.community) {
    auto why = request ? protocol::rejection{protocol::reason::error, "rooms are unavailable"}
                       : request.error();
    bump(st.args.metrics->events_rejected);
    send_frame(self, protocol::render_ok(ev.id, false, why.text()));
    return;
  }
  auto json = protocol::render_event_json(ev);
  if (json.size() > max_room_request_bytes) {
    bump(st.args.metrics->events_rejected);
    bump(st.args.metrics->room_requests_refused_early);
    send_frame(self, protocol::render_ok(ev.id, false, "invalid: a room request may be at most "
                                                         + std::to_string(max_room_request_bytes / 1024) + " KiB"));
    return;
  }
  if (auto refused = st.logic->refuse_room_request(request.value())) {
    bump(st.args.metrics->room_requests_refused_early);
    auto reply = room_reply_for(ev.kind, *refused);
    bump(reply.accepted ? st.args.metrics->events_accepted : st.args.metrics->events_rejected);
    send_frame(self, protocol::render_ok(ev.id, reply.accepted, reply.message));
    return;
  }
  // They wait on the community actor with membership requests, bounded together.
  const auto lane = is_own_room_request_kind(ev.kind) ? connection_state::own_lane::room
                                                      : connection_state::own_lane::none;
  if (refused_before_queue(self, ev, lane))
    return;
  bump(st.args.metrics->events_accepted);
  std::uint64_t ticket = st.next_ticket++;
  st.awaiting_membership.emplace(ticket,
                                 connection_state::awaiting_request{protocol::to_hex(ev.id), ev.kind, lane});
  storage::room_command command{ev, std::move(json), std::move(request).value()};
  self->send(st.args.community, room_atom_v, ticket, std::move(command));
}

void on_room_done(self_ptr self, std::uint64_t ticket, protocol::room_outcome outcome) {
  auto& st = self->state;
  auto it = st.awaiting_membership.find(ticket);
  if (it == st.awaiting_membership.end())
    return;
  auto reply = room_reply_for(it->second.kind, outcome);
  send_frame(self, protocol::render_ok(it->second.id, reply.accepted, reply.message));
  st.awaiting_membership.erase(it);
}

/// Keeps a join request that needs the AUTH the client has not sent yet (auth_grace); false
/// when it may not wait.
bool hold_join_for_auth(self_ptr self, const protocol::event& ev, const protocol::rejection& why) {
  auto& st = self->state;
  if (ev.kind != join_request_kind || why.why != protocol::reason::auth_required
      || st.logic->authenticated() || st.joins_awaiting_auth.size() >= max_joins_awaiting_auth
      || protocol::parsed_bytes(ev) > max_join_awaiting_auth_bytes)
    return false;
  st.joins_awaiting_auth.push_back(ev);
  start_auth_wait(self);
  bump(st.args.metrics->joins_awaited_auth);
  return true;
}

/// An admitted event goes to this connection's writer, which answers on the socket, unless the
/// pod's writers already have max_storage_waiting_bytes of events waiting.
void store_event(self_ptr self, std::shared_ptr<const protocol::event> ev,
                 std::shared_ptr<const std::string> json) {
  auto& st = self->state;
  auto& metrics = *st.args.metrics;
  const std::int64_t weight = storage_waiting_weight(*json, *ev);
  if (metrics.storage_waiting_bytes.load(std::memory_order_relaxed) + weight > max_storage_waiting_bytes) {
    bump(metrics.events_rejected);
    bump(metrics.events_refused_storage_busy);
    send_frame(self, protocol::render_ok(ev->id, false, "rate-limited: the relay is busy storing events; try again shortly"));
    return;
  }
  if (auto refused = st.logic->check_storage_share(weight)) {
    bump(metrics.events_rejected);
    send_frame(self, protocol::render_ok(ev->id, false, refused->text()));
    return;
  }
  std::shared_ptr<const address_storage_hold> address_share;
  if (const auto& ip = st.args.policy.ip) {
    if (!ip->try_hold_storage(weight, st.args.policy.max_storage_bytes_per_address)) {
      bump(metrics.events_rejected);
      bump(metrics.events_refused_address_storage);
      send_frame(self, protocol::render_ok(ev->id, false, "rate-limited: too many events from your address wait"
                                                          " to be stored; try again shortly"));
      return;
    }
    address_share = std::make_shared<const address_storage_hold>(ip, weight);
  }
  bump(metrics.events_accepted);
  metrics.storage_waiting_bytes.fetch_add(weight, std::memory_order_relaxed);
  st.logic->event_sent(weight);
  ok_route route{st.args.sink, st.events_answered, protocol::to_hex(ev->id), weight, std::move(address_share)};
  auto rooms = st.logic->admitted_rooms(*ev);
  const bool vanishes = ev->kind == protocol::vanish_kind;
  self->send(st.args.writer, store_atom_v, std::move(route),
             storage::event_write{st.args.policy.community_id, std::move(ev), std::move(json), std::move(rooms),
                                  true, st.logic->admitted_as(), vanishes});
}

void answer_event(self_ptr self, protocol::event_message& message, bool may_wait) {
  auto& st = self->state;
  auto& metrics = *st.args.metrics;
  const protocol::event& ev = message.ev;
  // The writer's OKs since the last event free their places in the bound on events in flight.
  st.logic->events_answered(st.events_answered->exchange(0, std::memory_order_acquire));
  if (auto refused = st.logic->admit_event(ev, unix_now(), monotonic_seconds())) {
    if (may_wait && hold_join_for_auth(self, ev, *refused))
      return;
    bump(metrics.events_rejected);
    if (ev.kind == 5 && deletion_targets(ev) > st.args.policy.max_deletion_targets)
      bump(metrics.deletions_refused);
    send_frame(self, protocol::render_ok(ev.id, false, refused->text()));
    return;
  }
  // Counted accepted or rejected there, once their own checks are done.
  if (is_membership_request(ev.kind)) {
    request_membership_change(self, ev);
    return;
  }
  if (protocol::is_room_request_kind(ev.kind)) {
    request_room_change(self, ev);
    return;
  }
  auto shared_event = std::make_shared<const protocol::event>(std::move(message.ev));
  auto json = std::make_shared<const std::string>(protocol::render_event_json(*shared_event));
  std::int64_t community = st.args.policy.community_id;
  if (protocol::classify(shared_event->kind) == protocol::kind_class::ephemeral) {
    bump(metrics.events_accepted);
    committed_event accepted{community, {shared_event, json}};
    self->send(st.args.fanout, publish_atom_v, accepted);
    if (st.args.bridge)
      self->send(st.args.bridge, publish_atom_v, accepted);
    send_frame(self, protocol::render_ok(shared_event->id, true, ""));
    return;
  }
  store_event(self, std::move(shared_event), std::move(json));
}

void on_event(self_ptr self, protocol::event_message& message) {
  bump(self->state.args.metrics->messages_event);
  answer_event(self, message, true);
}

/// The AUTH came (answered as their author would be now) or the grace ended (refused).
void release_joins(self_ptr self) {
  for (auto& ev : std::exchange(self->state.joins_awaiting_auth, {})) {
    protocol::event_message message{std::move(ev)};
    answer_event(self, message, false);
  }
}

void on_auth(self_ptr self, const protocol::auth_message& message) {
  bump(self->state.args.metrics->messages_auth);
  auto refused = self->state.logic->authenticate(message.ev, unix_now());
  send_frame(self, protocol::render_ok(message.ev.id, !refused, refused ? refused->text() : ""));
  if (!refused) {
    auto open = self->state.logic->subscription_ids();
    std::ranges::move(self->state.awaiting_auth.ids(), std::back_inserter(open));
    self->state.eoses_before_auth.auth_ok(monotonic_seconds(), open);
    release_joins(self);
    await_retries(self);
  }
}


void on_frame(self_ptr self, const std::string& text) {
  auto& st = self->state;
  double paid = 0;
  if (!charge_before_parsing(self, text, paid))
    return;
  auto parsed = protocol::parse_client_message(text, st.args.policy.limits);
  if (!charge_parsed(self, text.size(), parsed, paid))
    return;
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

/// Ids remembered after EOSE are forgotten by time even on a quiet subscription.
void schedule_echo_expiry(self_ptr self) {
  auto& st = self->state;
  if (st.echo_expiry_scheduled)
    return;
  st.echo_expiry_scheduled = true;
  auto after = std::chrono::duration<double>(history_echo_window + 1);
  self->delayed_send(self, std::chrono::duration_cast<std::chrono::milliseconds>(after), tick_atom_v);
}

void count_withheld(self_ptr self) {
  if (auto n = self->state.logic->take_withheld())
    self->state.args.metrics->room_events_withheld.fetch_add(n, std::memory_order_relaxed);
  if (auto n = self->state.logic->take_dropped_live())
    self->state.args.metrics->live_events_dropped.fetch_add(n, std::memory_order_relaxed);
}

/// A reply that comes back after the reader lost the right to read (removed, or the community
/// closed since the REQ): the revocation may have reached the fan-out before this subscription
/// did, so the reply itself ends it instead of being sent.
bool refuse_late_reply(self_ptr self, const std::string& sub, std::uint64_t generation) {
  auto& logic = *self->state.logic;
  if (!logic.must_leave() || !logic.is_open(sub, generation))
    return false;
  refuse_subscription(self, sub, logic.may_read().value_or(protocol::rejection{
                                   protocol::reason::restricted, "you may not read this community"}));
  return true;
}

/// A chunk's events as shared JSON: the storage reader shares them (query_chunks' `share`);
/// any given as text are wrapped once.
std::vector<storage::shared_body> shared_events(storage::query_result& result) {
  auto shared = std::move(result.shared);
  for (auto& json : result.events)
    shared.push_back(std::make_shared<const std::string>(std::move(json)));
  return shared;
}

} // namespace

void on_history(self_ptr self, const std::string& sub, std::uint64_t generation,
                storage::query_result& result) {
  auto& st = self->state;
  // Counted before the frames move out of the chunk.
  const std::size_t bytes = storage::bytes_of(result);
  if (refuse_late_reply(self, sub, generation)) {
    st.history->in_mailbox.fetch_sub(bytes, std::memory_order_release);
    if (result.last) {
      st.logic->query_finished();
      start_waiting_queries(self);
    }
    return;
  }
  if (!result.last) {
    // In one call: the outbox takes the chunk under one lock and wakes its writer once.
    auto part = st.logic->history_reply(sub, generation, shared_events(result),
                                        monotonic_seconds(), false);
    st.args.sink->send_events(part.events);
    count_withheld(self);
    // Only now, with the frames in the socket's queue, which counts them from here on.
    st.history->in_mailbox.fetch_sub(bytes, std::memory_order_release);
    return;
  }
  st.logic->query_finished();
  start_waiting_queries(self);
  schedule_echo_expiry(self);
  if (!result.ok) {
    // Only the subscription this reply was for: the id may name a newer REQ by now.
    if (st.logic->is_open(sub, generation) && st.logic->close_subscription(sub)) {
      self->send(st.args.fanout, unsubscribe_atom_v, st.args.owner, st.args.policy.community_id, sub);
      end_query(st, sub);
      send_frame(self, protocol::render_closed(sub, result.error));
    }
    return;
  }
  double now = monotonic_seconds();
  auto reply = st.logic->history_reply(sub, generation, shared_events(result), now, true);
  count_withheld(self);
  const bool answered = !reply.events.empty() || !reply.closing.empty();
  if (!reply.closing.empty()) // it starts with the EOSE
    st.eoses_before_auth.sent(sub, generation, now);
  st.args.sink->send_reply(reply.events, std::move(reply.closing));
  st.history->in_mailbox.fetch_sub(bytes, std::memory_order_release);
  if (!answered)
    return;
  if (auto query = st.queries_under_way.find(sub); query != st.queries_under_way.end()) {
    st.args.metrics->req_latency.observe(now - query->second.started);
    st.queries_under_way.erase(query);
  }
}

namespace {

/// Revocation: a closed community's member who lost membership loses every subscription now.
void on_revoke(self_ptr self, const pubkey_list& pubkeys) {
  auto& st = self->state;
  const auto& me = st.logic->authenticated();
  if (!me || std::find(pubkeys.begin(), pubkeys.end(), *me) == pubkeys.end()
      || !st.logic->lost_access())
    return;
  st.args.sink->drop_events();
  for (const auto& sub : st.logic->subscription_ids()) {
    st.logic->close_subscription(sub);
    send_frame(self, protocol::render_closed(sub, "restricted: you are no longer a member of this community"));
  }
  end_queries(st);
  self->send(st.args.fanout, forget_atom_v, st.args.owner, st.args.policy.community_id);
}

/// The community was closed: anonymous and non-member connections that were reading end.
void on_access_changed(self_ptr self) {
  auto& st = self->state;
  if (!st.logic->ends_when_closed())
    return;
  for (const auto& sub : st.logic->subscription_ids()) {
    st.logic->close_subscription(sub);
    send_frame(self, protocol::render_closed(sub, "restricted: this community is now closed to non-members"));
  }
  end_queries(st);
  self->send(st.args.fanout, forget_atom_v, st.args.owner, st.args.policy.community_id);
  st.args.sink->close(close_reason::policy); // the events still queued are dropped
}

/// A fan-out turn's live events for this connection: each (event, subscription) goes through
/// live_arrived (generation, room visibility, held until EOSE, history echoes), and what may go
/// out is queued to the socket at once, so a burst leaves in few writes.
void on_deliver(self_ptr self, const live_batch& batch) {
  auto& st = self->state;
  double now = monotonic_seconds();
  // On the stack for the usual turn of a few events: no allocation per delivery.
  boost::container::small_vector<shared_event_frame, 8> frames;
  for (const auto& match : batch.matches)
    if (match.event < batch.events.size())
      if (auto frame = st.logic->live_arrived(match.subscription.id, match.subscription.generation,
                                              batch.events[match.event], now))
        frames.push_back(std::move(*frame));
  if (!frames.empty())
    st.args.sink->send_events({frames.data(), frames.size()});
  count_withheld(self);
}

/// A connection whose actor fails (an exception escaped a handler: a bug) must not stay open
/// unanswered, nor its subscriptions in the fan-out: the socket closes with 1011 and the fan-out
/// forgets it, as at a hangup.
void leave_cleanly_on_failure(self_ptr self) {
  const auto& args = self->state.args;
  self->attach_functor([sink = args.sink, fanout = args.fanout, owner = args.owner,
                        community = args.policy.community_id, metrics = args.metrics,
                        system = &self->system()](const caf::error& reason) {
    if (!ended_by_failure(reason))
      return; // a hangup, the pod stopping, or nothing holds it (nor its subscriptions)
    spdlog::error("connection {} of community {}: its actor failed: {}", owner, community,
                  system->render(reason));
    bump(metrics->connection_failures);
    sink->close(close_reason::internal_error);
    caf::anon_send(fanout, forget_atom_v, owner, community);
  });
}

} // namespace

caf::behavior connection_actor(caf::stateful_actor<connection_state>* self, connection_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.logic.emplace(st.args.policy, st.args.challenge);
  st.awaiting_state = replies_awaiting_state(st.args.state_wait_seconds);
  st.history = std::make_shared<history_flow>();
  st.history->sink = st.args.sink;
  st.history->address = st.args.policy.ip;
  send_frame(self, protocol::render_auth_challenge(st.args.challenge));
  leave_cleanly_on_failure(self);
  if (st.args.readers_waiting)
    self->attach_functor([waits = st.args.readers_waiting, waiting = st.waiting_for_room,
                          me = self->address()] {
      if (*waiting)
        waits->leave(me);
    });
  return {
    [=](frame_atom, const std::string& text) {
      on_frame(self, text);
      if (auto& pending = self->state.args.frames_pending)
        pending->handled(text.size());
    },
    [=](history_atom, std::string& sub, std::uint64_t generation, storage::query_result& result) {
      on_query_reply(self, history_chunk_reply{std::move(sub), generation, std::move(result)});
    },
    [=](counted_atom, const std::string&, std::uint64_t ticket, storage::count_result& result) {
      on_query_reply(self, count_reply{ticket, std::move(result)});
    },
    [=](state_check_atom) { on_state_check(self); },
    [=](tick_atom) {
      self->state.echo_expiry_scheduled = false;
      self->state.logic->expire_history_echoes(monotonic_seconds());
      if (self->state.logic->subscription_count() > 0)
        schedule_echo_expiry(self);
    },
    [=](resume_atom) { on_resume(self); },
    [=](auth_wait_atom, std::uint64_t round) {
      if (round == self->state.auth_wait && !wait_longer_for_auth(self)) {
        release_joins(self);
        release_awaiting_auth(self);
      }
    },
    [=](deliver_atom, const live_batch& batch) { on_deliver(self, batch); },
    [=](member_done_atom, std::uint64_t ticket, const storage::membership_result& result) {
      on_member_done(self, ticket, result);
    },
    [=](minted_atom, std::uint64_t ticket, const invite_reply& reply) { on_minted(self, ticket, reply); },
    [=](room_done_atom, std::uint64_t ticket, protocol::room_outcome outcome) {
      on_room_done(self, ticket, outcome);
    },
    [=](revoke_atom, std::int64_t, const pubkey_list& pubkeys) { on_revoke(self, pubkeys); },
    [=](access_atom, std::int64_t) { on_access_changed(self); },
    [=](drain_atom) { on_drain(self); },
    [=](hangup_atom) {
      auto& s = self->state;
      self->send(s.args.fanout, forget_atom_v, s.args.owner, s.args.policy.community_id);
      self->quit();
    },
  };
}

} // namespace comb::actors
