// SPDX-License-Identifier: MIT
#include "actors/bridge/gatekeeper.hpp"

#include <spdlog/spdlog.h>

#include "actors/clock.hpp"
#include "actors/messages.hpp"
#include "storage/bridge_envelope.hpp"

namespace comb::actors {
namespace {

using namespace std::chrono_literals;

constexpr auto tick_period = 1s;
/// Node ids whose last proof the gatekeeper keeps (peers of one deployment are a handful).
constexpr std::size_t max_proofs_kept = 256;

std::chrono::steady_clock::time_point steady_now() {
  return std::chrono::steady_clock::now();
}

/// Remote text for a log line: bounded, control characters replaced (no forged lines).
std::string printable(std::string text, std::size_t limit = 120) {
  if (text.size() > limit)
    text.resize(limit);
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return text;
}

std::string key_of(const caf::actor& peer) {
  return caf::to_string(peer.address());
}

} // namespace

bool admitted_at_gate(const caf::type_erased_tuple& content) {
  using std::string;
  return content.match_elements<gate_order>()
         || content.match_elements<hello_atom, string, string>()
         || content.match_elements<challenge_atom, string, string, string>()
         || content.match_elements<prove_atom, string, string>()
         || content.match_elements<welcome_atom>()
         || content.match_elements<envelope_atom, string>();
}

gatekeeper::gatekeeper(caf::actor_config& config, gatekeeper_args args)
  : caf::event_based_actor(config), args_(std::move(args)),
    handshake_(args_.node_id, args_.secret, args_.limits) {}

void gatekeeper::enqueue(caf::mailbox_element_ptr element, caf::execution_unit* unit) {
  if (element && admitted_at_gate(element->content())) {
    caf::event_based_actor::enqueue(std::move(element), unit);
    return;
  }
  // Any thread (the network's workers among them): atomics and spdlog only.
  bump(args_.metrics->cluster_dropped_messages);
  const auto second = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
  if (last_drop_log_.exchange(second) != second) // at most one line a second
    spdlog::warn("cluster: dropped a message the cluster port does not take: {}",
                 element ? printable(caf::to_string(element->content())) : "(none)");
}

caf::behavior gatekeeper::make_behavior() {
  delayed_send(caf::actor_cast<caf::actor>(this), tick_period, gate_order{gate_order::kind::tick, {}, {}});
  return {
    [this](gate_order& order) { on_order(order); },
    [this](hello_atom, const std::string& node_id, const std::string& nonce) {
      on_hello(node_id, nonce);
    },
    [this](challenge_atom, const std::string& node_id, const std::string& nonce,
           const std::string& proof) { on_challenge(node_id, nonce, proof); },
    [this](prove_atom, const std::string& node_id, const std::string& proof) {
      on_prove(node_id, proof);
    },
    [this](welcome_atom) { on_welcome(); },
    [this](envelope_atom, std::string& payload) { on_envelope(payload); },
  };
}

std::string gatekeeper::sender_key() {
  const auto& from = current_sender();
  return from ? caf::to_string(from->address()) : std::string();
}

void gatekeeper::refuse(const std::string& why) {
  bump(args_.metrics->bridge_refused_peers);
  const auto second = std::chrono::duration_cast<std::chrono::seconds>(
                        steady_now().time_since_epoch()).count();
  if (second != last_refusal_log_) {
    last_refusal_log_ = second;
    refusals_this_second_ = 0;
  }
  if (++refusals_this_second_ > 10)
    return; // a flood gives ten lines a second at most; the counter has every one
  spdlog::warn("cluster: refused {}: {}", printable(sender_key(), 80), printable(why, 200));
}

void gatekeeper::on_order(gate_order& order) {
  switch (order.what) {
    case gate_order::kind::dialed: {
      auto key = key_of(order.peer);
      dialed_[key] = order.peer;
      where_[key] = order.text;
      greet(key);
      break;
    }
    case gate_order::kind::lost:
      lose(order.peer);
      break;
    case gate_order::kind::send_all:
      for (const auto& [key, peer] : dialed_)
        if (handshake_.linked(key))
          send(peer, envelope_atom_v, order.text);
      break;
    case gate_order::kind::send_to:
      if (order.peer && handshake_.linked(key_of(order.peer)))
        send(order.peer, envelope_atom_v, std::move(order.text));
      break;
    case gate_order::kind::tick:
      tick();
      break;
    case gate_order::kind::stop:
      quit();
      break;
  }
}

void gatekeeper::greet(const std::string& key) {
  auto it = dialed_.find(key);
  if (it == dialed_.end())
    return;
  auto hello = handshake_.dial(key, steady_now());
  send(it->second, hello_atom_v, hello.dialer_id, hello.nonce);
}

void gatekeeper::on_hello(const std::string& node_id, const std::string& nonce) {
  auto key = sender_key();
  if (key.empty())
    return refuse("hello without a sender");
  auto challenge = handshake_.on_hello(key, {node_id, nonce}, steady_now());
  if (!challenge)
    return refuse(challenge.error());
  send(caf::actor_cast<caf::actor>(current_sender()), challenge_atom_v,
       challenge.value().acceptor_id, challenge.value().nonce, challenge.value().proof);
}

void gatekeeper::on_challenge(const std::string& node_id, const std::string& nonce,
                              const std::string& proof) {
  auto key = sender_key();
  auto it = dialed_.find(key);
  if (it == dialed_.end())
    return refuse("challenge from a node this pod did not dial");
  auto answer = handshake_.on_challenge(key, {node_id, nonce, proof}, steady_now());
  if (!answer) {
    spdlog::warn("cluster: peer {} ({}) failed to prove the secret: {}", where_[key],
                 printable(node_id, 80), answer.error());
    return refuse(answer.error());
  }
  send(it->second, prove_atom_v, answer.value().dialer_id, answer.value().value);
}

void gatekeeper::on_prove(const std::string& node_id, const std::string& proof) {
  auto key = sender_key();
  if (auto refused = handshake_.on_prove(key, {node_id, proof}, steady_now()))
    return refuse("cluster peer " + node_id.substr(0, 80) + ": " + *refused);
  spdlog::info("cluster: peer {} authenticated", printable(node_id, 80));
  if (proved_at_.size() >= max_proofs_kept)
    proved_at_.clear();
  proved_at_[node_id] = storage::envelope_clock_ms();
  for (auto it = gaps_.begin(); it != gaps_.end();) {
    auto where = (it++)->first; // end_gap_if_whole may erase it
    end_gap_if_whole(where);
  }
  send(caf::actor_cast<caf::actor>(current_sender()), welcome_atom_v);
}

void gatekeeper::on_welcome() {
  auto key = sender_key();
  auto it = dialed_.find(key);
  if (it == dialed_.end() || !handshake_.on_welcome(key))
    return refuse("welcome from a node this pod did not dial and verify");
  bump(args_.metrics->cluster_peers_linked);
  spdlog::info("cluster: linked to peer {} at {}", printable(handshake_.peer_id(key), 80), where_[key]);
  send(args_.bridge, peer_atom_v, it->second);
  if (auto gap = gaps_.find(where_[key]); gap != gaps_.end()) {
    gap->second.node = handshake_.peer_id(key);
    end_gap_if_whole(where_[key]);
  }
}

void gatekeeper::on_envelope(std::string& payload) {
  if (!handshake_.trusts(sender_key()))
    return refuse("envelope from a node that did not prove the secret");
  send(args_.bridge, envelope_atom_v, std::move(payload));
}

void gatekeeper::lose(const caf::actor& peer) {
  auto key = key_of(peer);
  if (handshake_.linked(key)) {
    args_.metrics->cluster_peers_linked -= 1;
    gaps_.try_emplace(where_[key], link_gap{storage::envelope_clock_ms(), {}}); // the first loss
  }
  handshake_.forget(key);
  dialed_.erase(key);
  where_.erase(key);
}

/// Both links to the peer at `where` are back after its gap: what the peer sent meanwhile never
/// came. The bridge has the access watcher hand the local fan-out what was stored since the
/// loss, as after a Redis gap (the fan-out drops what it delivered).
void gatekeeper::end_gap_if_whole(const std::string& where) {
  auto gap = gaps_.find(where);
  if (gap == gaps_.end() || gap->second.node.empty())
    return; // our link to it is not back yet
  auto proved = proved_at_.find(gap->second.node);
  if (proved == proved_at_.end() || proved->second < gap->second.lost_at)
    return; // its link to us is not back yet
  send(args_.bridge, ready_atom_v, gap->second.lost_at);
  gaps_.erase(gap);
}

void gatekeeper::tick() {
  auto t = steady_now();
  for (const auto& dialer : handshake_.expire(t)) {
    bump(args_.metrics->bridge_refused_peers);
    spdlog::warn("cluster: refused cluster peer {}: handshake not completed in time (another "
                 "secret, or not a pod)", printable(dialer, 80));
  }
  for (const auto& key : handshake_.stalled(t))
    greet(key);
  delayed_send(caf::actor_cast<caf::actor>(this), tick_period, gate_order{gate_order::kind::tick, {}, {}});
}

} // namespace comb::actors
