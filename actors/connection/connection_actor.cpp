// SPDX-License-Identifier: MIT
#include "actors/connection/connection_actor.hpp"

#include <chrono>

#include "protocol/canonical_json.hpp"
#include "protocol/client_message.hpp"
#include "protocol/relay_message.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;

namespace {

using self_ptr = caf::stateful_actor<connection_state>*;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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
  auto shared_event = std::make_shared<const protocol::event>(std::move(message.ev));
  auto json = std::make_shared<const std::string>(protocol::render_event_json(*shared_event));
  std::int64_t community = st.args.policy.community_id;
  if (protocol::classify(shared_event->kind) == protocol::kind_class::ephemeral) {
    self->send(st.args.fanout, publish_atom_v, committed_event{community, {shared_event, json}});
    send_frame(self, protocol::render_ok(shared_event->id, true, ""));
    return;
  }
  std::uint64_t ticket = st.next_ticket++;
  st.awaiting_ok.emplace(ticket, protocol::to_hex(shared_event->id));
  st.logic->event_sent();
  self->send(st.args.writer, store_atom_v, ticket,
             storage::event_write{community, std::move(shared_event), std::move(json)});
}

void on_req(self_ptr self, protocol::req_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_req);
  if (auto refused = st.logic->may_read()) {
    send_frame(self, protocol::render_closed(message.subscription_id, refused->text()));
    return;
  }
  auto generation = st.logic->open_subscription(message.subscription_id);
  if (!generation) {
    send_frame(self, protocol::render_closed(message.subscription_id, generation.error().text()));
    return;
  }
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
  for (auto& frame : st.logic->history_arrived(sub, generation, result.events))
    send_frame(self, std::move(frame));
}

void on_deliver(self_ptr self, const live_event& event, const std::vector<std::string>& subs) {
  for (const auto& sub : subs)
    if (auto frame = self->state.logic->live_arrived(sub, event))
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
    [=](deliver_atom, const live_event& event, const std::vector<std::string>& subs) {
      on_deliver(self, event, subs);
    },
    [=](hangup_atom) {
      auto& s = self->state;
      self->send(s.args.fanout, forget_atom_v, s.args.owner, s.args.policy.community_id);
      self->quit();
    },
  };
}

} // namespace comb::actors
