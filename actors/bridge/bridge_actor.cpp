// SPDX-License-Identifier: MIT
#include "actors/bridge/bridge_actor.hpp"

#include <spdlog/spdlog.h>
#include <utility>

#include "actors/bridge/gatekeeper.hpp"
#include "storage/bridge_envelope.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<bridge_state>*;

/// Pods trust each other's sizes (relay-written lists of big communities are large), not
/// their content: signatures are still verified.
protocol::protocol_limits envelope_limits() {
  protocol::protocol_limits limits;
  limits.max_tags_per_event = 1'000'000;
  limits.max_content_bytes = 64 * 1024 * 1024;
  return limits;
}

void send_everywhere(self_ptr self, const std::string& envelope) {
  auto& st = self->state;
  if (st.args.redis)
    st.args.redis->publish(envelope);
  if (st.gate)
    self->send(st.gate, gate_order{gate_order::kind::send_all, {}, envelope});
  bump(st.args.metrics->bridge_published);
}

std::string envelope_of(self_ptr self, const committed_event& committed) {
  const auto& args = self->state.args;
  return storage::encode_envelope(args.cluster_secret, args.node_id, committed.community_id,
                                  *committed.event.json);
}

/// Counts a dropped envelope; logs at most one line a second (a flood must not fill the disk).
void drop(self_ptr self, const storage::envelope_refusal& refusal) {
  auto& st = self->state;
  bump(refusal.unauthenticated ? st.args.metrics->bridge_unauthenticated
       : refusal.stale         ? st.args.metrics->bridge_stale
                               : st.args.metrics->bridge_rejected);
  auto second = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count();
  if (st.last_drop_log == second)
    return;
  st.last_drop_log = second;
  spdlog::warn("bridge: dropped an envelope: {}", refusal.why);
}

void receive(self_ptr self, const std::string& payload) {
  auto& st = self->state;
  auto envelope = storage::decode_envelope(payload, envelope_limits(), st.args.cluster_secret);
  if (!envelope)
    return drop(self, envelope.error());
  auto& e = envelope.value();
  if (e.origin == st.args.node_id)
    return; // our own echo
  bump(st.args.metrics->bridge_received);
  live_event event{e.ev, e.event_json};
  // Live delivery only: member caches follow the database (access watcher), never a bridged
  // 13534, so a late envelope cannot roll one back.
  self->send(st.args.fanout, publish_atom_v, committed_event{e.community_id, event});
}

/// The start-up lists, to a newly linked CAF peer, or (`peer` null) to Redis.
void flush_startup(self_ptr self, const caf::actor& peer) {
  auto& st = self->state;
  for (const auto& committed : st.startup) {
    auto envelope = envelope_of(self, committed);
    if (peer && st.gate)
      self->send(st.gate, gate_order{gate_order::kind::send_to, peer, std::move(envelope)});
    else if (!peer && st.args.redis)
      st.args.redis->publish(std::move(envelope));
  }
}

} // namespace

caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, bridge_args args) {
  self->state.args = std::move(args);
  return {
    [=](publish_atom, const committed_event& committed) {
      send_everywhere(self, envelope_of(self, committed));
    },
    [=](startup_atom, const committed_event& committed) {
      self->state.startup.push_back(committed);
      send_everywhere(self, envelope_of(self, committed));
    },
    [=](redis_atom, const std::string& payload) { receive(self, payload); },
    [=](ready_atom) {
      // Once: a Redis reconnect must not re-send start-up lists that may be stale by now.
      if (!std::exchange(self->state.startup_sent_to_redis, true))
        flush_startup(self, {});
    },
    // From the gatekeeper, which lets through only peers that proved the secret.
    [=](envelope_atom, const std::string& payload) { receive(self, payload); },
    [=](peer_atom, const caf::actor& peer) { flush_startup(self, peer); },
    [=](bridge_gate& gate) { self->state.gate = std::move(gate.gate); },
  };
}

} // namespace comb::actors
