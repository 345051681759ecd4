// SPDX-License-Identifier: MIT
#include "actors/fanout/fanout_actor.hpp"

#include "actors/clock.hpp"
#include "actors/messages.hpp"

#include <algorithm>
#include <optional>

namespace comb::actors {
namespace {

constexpr std::size_t recent_ids_kept = 100'000;

constexpr std::uint32_t member_list_kind = 13534;

/// True the first time an event is seen in a community (within the last `recent_ids_kept`).
bool first_sighting(fanout_state& st, const delivered_key& key) {
  if (!st.recent.insert(key).second)
    return false;
  st.recent_order.push_back(key);
  if (st.recent_order.size() > recent_ids_kept) {
    st.recent.erase(st.recent_order.front());
    st.recent_order.pop_front();
  }
  return true;
}

/// Lists only move forward: a 13534 older than one already delivered in its community is
/// dropped (only the relay can publish 13534, so the kind is enough).
bool list_moves_forward(fanout_state& st, std::int64_t community, const protocol::event& ev) {
  if (ev.kind != member_list_kind)
    return true;
  auto& newest = st.newest_list_at[community];
  if (ev.created_at < newest)
    return false;
  newest = ev.created_at;
  return true;
}

using self_ptr = caf::stateful_actor<fanout_state>*;

/// True when the held deliveries must go now although more messages wait.
bool hold_is_full(const fanout_state& st) {
  auto cap = st.coalescing ? max_held_coalescing : max_held_deliveries;
  return st.held_count >= cap || st.publishes_while_held >= max_held_publishes;
}

/// Sends every held batch, one message per connection.
void send_held(self_ptr self) {
  auto& st = self->state;
  for (auto& held : st.held) {
    held.to->held = fanout_connection::no_batch;
    self->send(held.to->actor, deliver_atom_v, std::move(held.batch));
  }
  st.held.clear();
  st.held_count = 0;
  st.publishes_while_held = 0;
  st.flush_scheduled = false;
  ++st.flush_epoch;
}

/// Once per `rate_interval`: whether the deliveries of the last interval came fast enough to
/// coalesce turns.
void measure_rate(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  auto elapsed = now - st.rate_since;
  if (elapsed < rate_interval)
    return;
  double seconds = std::chrono::duration<double>(elapsed).count();
  st.coalescing = static_cast<double>(st.delivered_since) >= coalesce_above_rate * seconds;
  st.window = window_for(st.delivered_since, st.reached_since, seconds);
  st.rate_since = now;
  st.delivered_since = 0;
  st.reached_since = 0;
  ++st.rate_epoch;
}

/// After a publish: sends the held deliveries when they are many, or when the mailbox holds
/// nothing more to fan out and the pod is not coalescing; while coalescing, the first held
/// delivery of a turn schedules their flush `coalescing_window` later.
void end_publish(self_ptr self) {
  auto& st = self->state;
  measure_rate(self);
  if (st.held_count == 0)
    return;
  if (hold_is_full(st) || (!st.coalescing && self->mailbox().empty())) {
    send_held(self);
    return;
  }
  if (st.coalescing && !st.flush_scheduled) {
    st.flush_scheduled = true;
    self->delayed_send(self, st.window, flush_atom_v, st.flush_epoch);
  }
}

/// Room a new batch reserves, at most: a writer's commit may hold thousands of events, of which
/// a connection with narrow filters gets few.
constexpr std::size_t max_reserved_events = 32;

/// The batch of `connection`, with `event` added as its newest event. A new batch has room for
/// the `expected` events of the turn, up to max_reserved_events (grown one by one, copying each,
/// it was a fifth of the fan-out's work per delivery).
live_batch& batch_for(fanout_state& st, fanout_connection& connection, const live_event& event,
                      std::size_t expected) {
  if (connection.held == fanout_connection::no_batch) {
    if (connection.reached_in != st.rate_epoch) {
      connection.reached_in = st.rate_epoch;
      ++st.reached_since;
    }
    connection.held = st.held.size();
    st.held.push_back({&connection, {}});
    std::size_t room = std::min(expected, max_reserved_events);
    st.held.back().batch.events.reserve(room);
    st.held.back().batch.matches.reserve(room);
  }
  live_batch& batch = st.held[connection.held].batch;
  batch.events.push_back(event);
  return batch;
}

/// Matches a committed event against its community's subscriptions and holds a delivery for
/// each (sent by send_held).
void publish(self_ptr self, const committed_event& committed, std::size_t expected = 1) {
  auto& st = self->state;
  if (st.held_count > 0)
    ++st.publishes_while_held;
  if (!list_moves_forward(st, committed.community_id, *committed.event.ev))
    return;
  // NIP-40: one that expired on its way here (held by the bridge, or brought by a gap fill that
  // read it just before) is not sent.
  if (protocol::has_expired(*committed.event.ev, unix_now())) {
    bump(st.args.metrics->live_events_expired, std::uint64_t{1});
    return;
  }
  // A community nobody here ever subscribed in takes no place among the ids kept: a gap fill
  // brings up to a thousand events of each community, and those would push out the ids of
  // events delivered just before the loss, which the fill brings again.
  auto it = st.communities.find(committed.community_id);
  if (it == st.communities.end() || !first_sighting(st, {committed.community_id, committed.event.ev->id}))
    return;
  bump(st.args.metrics->fanout_filters_checked, it->second.match_into(*committed.event.ev, st.matches));
  live_batch* batch = nullptr;
  std::optional<std::uint64_t> owner;
  std::size_t held_before = st.held_count;
  // Matches come sorted by owner: each connection's are together.
  for (const auto& match : st.matches) {
    if (match.owner != owner) {
      owner = match.owner;
      auto target = st.connections.find(match.owner);
      batch = target == st.connections.end()
                ? nullptr
                : &batch_for(st, target->second, committed.event, expected);
    }
    if (batch == nullptr)
      continue;
    batch->matches.push_back({static_cast<std::uint32_t>(batch->events.size() - 1),
                              {*match.subscription_id, match.generation}});
    ++st.held_count;
  }
  st.delivered_since += st.held_count - held_before;
  bump(st.args.metrics->deliveries, static_cast<std::uint64_t>(st.held_count - held_before));
}

} // namespace

caf::timespan window_for(std::size_t deliveries, std::size_t connections, double seconds) {
  caf::timespan shortest = coalescing_window;
  if (deliveries == 0 || connections == 0 || seconds <= 0)
    return shortest;
  double per_connection_per_s = static_cast<double>(deliveries) / static_cast<double>(connections) / seconds;
  auto wanted = std::chrono::duration_cast<caf::timespan>(
    std::chrono::duration<double>(coalesced_events_per_write / per_connection_per_s));
  return std::clamp(wanted, shortest, caf::timespan{max_coalescing_window});
}

caf::behavior fanout_actor(caf::stateful_actor<fanout_state>* self, fanout_args args) {
  self->state.args = std::move(args);
  self->state.rate_since = self->clock().now();
  self->state.window = coalescing_window;
  return {
    [=](subscribe_atom, live_request& request) {
      send_held(self);
      auto& st = self->state;
      st.communities[request.community_id].add(request.owner, request.subscription_id,
                                                request.filters, request.generation);
      st.connections[request.owner].actor = request.connection;
      st.subscribers[request.community_id].insert(request.owner);
      const auto& readers = st.args.readers;
      if (readers.empty())
        return;
      history_request history{request.connection, request.community_id, request.subscription_id,
                              request.generation, std::move(request.filters), std::move(request.flow),
                              std::move(request.hidden), std::move(request.ended)};
      self->send(request.reader ? request.reader
                                : pick_reader(readers, st.args.readers_waiting.get(), request.owner),
                 query_atom_v, std::move(history));
    },
    [=](unsubscribe_atom, std::uint64_t owner, std::int64_t community, const std::string& sub) {
      send_held(self);
      auto it = self->state.communities.find(community);
      if (it != self->state.communities.end())
        it->second.remove(owner, sub);
    },
    [=](forget_atom, std::uint64_t owner, std::int64_t community) {
      send_held(self);
      auto it = self->state.communities.find(community);
      if (it != self->state.communities.end())
        it->second.remove_owner(owner);
      self->state.connections.erase(owner);
      self->state.subscribers[community].erase(owner);
    },
    [=](revoke_atom, std::int64_t community, const pubkey_list& pubkeys) {
      send_held(self);
      auto& st = self->state;
      for (auto owner : st.subscribers[community])
        if (auto it = st.connections.find(owner); it != st.connections.end())
          self->send(it->second.actor, revoke_atom_v, community, pubkeys);
    },
    [=](publish_atom, const committed_event& committed) {
      publish(self, committed);
      end_publish(self);
    },
    [=](publish_atom, const committed_events& batch) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        publish(self, batch[i], batch.size() - i);
        if (hold_is_full(self->state))
          send_held(self);
      }
      end_publish(self);
    },
    [=](flush_atom, std::uint64_t epoch) {
      // An older epoch's deliveries went out already; but deliveries held while not coalescing
      // (the mailbox was not empty: this message was in it) go now.
      if (epoch == self->state.flush_epoch || !self->state.flush_scheduled)
        send_held(self);
    },
  };
}

} // namespace comb::actors
