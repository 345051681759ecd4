// SPDX-License-Identifier: MIT
#include "actors/bridge/bridge_actor.hpp"

#include <spdlog/spdlog.h>
#include <utility>

#include "protocol/sha256.hpp"
#include "protocol/signature.hpp"
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

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void send_everywhere(self_ptr self, const std::string& envelope) {
  auto& st = self->state;
  if (st.args.redis)
    st.args.redis->publish(envelope);
  for (const auto& peer : st.peers)
    self->send(peer, envelope_atom_v, envelope);
  bump(st.args.metrics->bridge_published);
}

std::string envelope_of(self_ptr self, const committed_event& committed) {
  return storage::encode_envelope(self->state.args.node_id, committed.community_id,
                                  *committed.event.json);
}

void receive(self_ptr self, const std::string& payload) {
  auto& st = self->state;
  auto envelope = storage::decode_envelope(payload, envelope_limits());
  if (!envelope) {
    bump(st.args.metrics->bridge_rejected);
    spdlog::warn("bridge: dropped an envelope: {}", envelope.error().text());
    return;
  }
  auto& e = envelope.value();
  if (e.origin == st.args.node_id)
    return; // our own echo
  bump(st.args.metrics->bridge_received);
  live_event event{e.ev, e.event_json};
  // Live delivery only: member caches follow the database (access watcher), never a bridged
  // 13534, so a late envelope cannot roll one back.
  self->send(st.args.fanout, publish_atom_v, committed_event{e.community_id, event});
}

void greet(self_ptr self, const caf::actor& remote) {
  self->monitor(remote);
  self->send(remote, hello_atom_v, self->state.args.node_id);
}

void on_challenge(self_ptr self, const std::string& nonce) {
  auto& st = self->state;
  auto peer = caf::actor_cast<caf::actor>(self->current_sender());
  self->send(peer, prove_atom_v, st.args.node_id,
             cluster_proof(st.args.cluster_secret, nonce, st.args.node_id));
}

void on_prove(self_ptr self, const std::string& node_id, const std::string& proof) {
  auto& st = self->state;
  auto sender = self->current_sender() ? self->current_sender()->address() : caf::actor_addr{};
  auto it = st.challenges.find(sender);
  bool valid = it != st.challenges.end()
               && constant_time_equal(proof, cluster_proof(st.args.cluster_secret, it->second, node_id));
  if (it != st.challenges.end())
    st.challenges.erase(it);
  if (!valid) {
    bump(st.args.metrics->bridge_refused_peers);
    spdlog::warn("bridge: refused cluster peer {}: wrong secret", node_id);
    return;
  }
  st.trusted_senders.insert(sender);
  self->send(caf::actor_cast<caf::actor>(self->current_sender()), welcome_atom_v);
  spdlog::info("bridge: cluster peer {} authenticated", node_id);
}

void flush_startup(self_ptr self, const std::vector<caf::actor>& to) {
  for (const auto& committed : self->state.startup) {
    auto envelope = envelope_of(self, committed);
    for (const auto& peer : to)
      self->send(peer, envelope_atom_v, envelope);
    if (to.empty() && self->state.args.redis)
      self->state.args.redis->publish(envelope);
  }
}

} // namespace

std::string cluster_proof(const std::string& secret, const std::string& nonce,
                          const std::string& node_id) {
  return protocol::to_hex(protocol::sha256(secret + '\n' + nonce + '\n' + node_id));
}

caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, bridge_args args) {
  self->state.args = std::move(args);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    st.trusted_senders.erase(down.source);
    auto before = st.peers.size();
    std::erase_if(st.peers, [&](const caf::actor& p) { return p.address() == down.source; });
    st.args.metrics->cluster_peers_linked -= static_cast<std::int64_t>(before - st.peers.size());
  });
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
    [=](envelope_atom, const std::string& payload) {
      auto sender = self->current_sender() ? self->current_sender()->address() : caf::actor_addr{};
      if (!self->state.trusted_senders.contains(sender)) {
        bump(self->state.args.metrics->bridge_refused_peers);
        return;
      }
      receive(self, payload);
    },
    [=](peer_atom, const caf::actor& remote) { greet(self, remote); },
    [=](hello_atom, const std::string&) {
      std::array<std::uint8_t, 16> nonce{};
      protocol::fill_random(nonce);
      auto sender = self->current_sender();
      if (!sender)
        return;
      auto text = protocol::to_hex(nonce);
      self->state.challenges[sender->address()] = text;
      self->monitor(caf::actor_cast<caf::actor>(sender));
      self->send(caf::actor_cast<caf::actor>(sender), challenge_atom_v, text);
    },
    [=](challenge_atom, const std::string& nonce) { on_challenge(self, nonce); },
    [=](prove_atom, const std::string& node_id, const std::string& proof) {
      on_prove(self, node_id, proof);
    },
    [=](welcome_atom) {
      auto peer = caf::actor_cast<caf::actor>(self->current_sender());
      self->state.peers.push_back(peer);
      bump(self->state.args.metrics->cluster_peers_linked);
      flush_startup(self, {peer});
    },
  };
}

} // namespace comb::actors
