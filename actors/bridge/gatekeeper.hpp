// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/bridge/cluster_handshake.hpp"
#include "actors/bridge/inbound_bound.hpp"
#include "actors/metrics.hpp"

namespace comb::actors {

/// An order to the gatekeeper from this process. A remote node cannot send one: CAF only
/// deserializes types it was told about, and this one is never announced.
struct gate_order {
  enum class kind {
    dialed,   ///< a peer connector linked to `peer` (at `text`, host:port): greet it
    lost,     ///< the link to `peer` dropped
    dialer_lost, ///< from the link watch: the link of the dialer `text` (a key) dropped
    watch,    ///< to the link watch: report when the link to `peer` drops (`text`: its epoch)
    send_all, ///< `text` is an envelope for every linked peer
    tick,     ///< housekeeping: expire challenges, greet stalled peers again
    stop,     ///< end the actor (exit messages are refused, so this is the only way)
  };
  kind what = kind::tick;
  caf::actor peer;
  std::string text;
};

struct gatekeeper_args {
  std::string node_id;
  std::string secret;
  caf::actor bridge; ///< gets (envelope_atom, payload) from authenticated peers
  std::shared_ptr<relay_metrics> metrics;
  handshake_limits limits;
  /// The bridge's bound on envelopes on their way to it (`bridge_args::inbound`: the bridge
  /// gives back what the gatekeeper took).
  std::shared_ptr<inbound_bound> to_bridge = std::make_shared<inbound_bound>();
};

/// The only actor a remote node can reach: the one published on the cluster port, and the one
/// that sends to peers (a local actor becomes addressable from the network once it sends there).
/// Its mailbox admits the handshake (hello, challenge, prove, welcome), envelopes and local
/// gate_orders, nothing else: exit and down messages (CAF lets a remote send both, and an exit
/// with reason `kill` would end any actor), requests and any other shape are dropped before
/// they are queued, counted and logged; so is what the network sends past 10,000 messages or
/// 256 MiB waiting (inbound_bound). Envelopes pass only from peers that proved the secret, and
/// reach the bridge, whose own handlers a remote can never address.
class gatekeeper final : public caf::event_based_actor {
public:
  gatekeeper(caf::actor_config& config, gatekeeper_args args);

  void enqueue(caf::mailbox_element_ptr element, caf::execution_unit* unit) override;

  caf::behavior make_behavior() override;

  const char* name() const override { return "gatekeeper"; }

private:
  [[nodiscard]] std::string sender_key();
  void arrived(); ///< a message from the network left the mailbox: its place is free again
  void refuse(const std::string& why);
  void on_order(gate_order& order);
  void on_hello(const std::string& node_id, const std::string& nonce);
  void on_challenge(const std::string& node_id, const std::string& nonce, const std::string& proof);
  void on_prove(const std::string& node_id, const std::string& proof);
  void on_welcome();
  void on_envelope(std::string& payload);
  void greet(const std::string& key);
  void send_to_peers(const std::string& envelope);
  void lose(const std::string& key);
  void lose_dialer(const std::string& key, const std::string& epoch);
  void open_gap(const std::string& node, const std::string& where, std::int64_t lost_at);
  bool end_gaps(const std::string& node, const std::string& where);
  void cover_dialer_gaps();
  [[nodiscard]] bool proved_since(const std::string& lost_key, std::int64_t since_ms) const;
  void tick();

  gatekeeper_args args_;
  cluster_handshake handshake_;
  std::unordered_map<std::string, caf::actor> dialed_; ///< by key: links our connectors made
  std::unordered_map<std::string, std::string> where_; ///< by key: host:port, for logs
  /// A peer that dialed us and proved the secret: envelopes go to it over its link too, so a
  /// peer listed on one side only still gets them. A peer that is also linked as dialed gets
  /// them once: both directions name the same remote gatekeeper, hence the same key.
  struct accepted_dialer {
    caf::actor peer;
    std::string node;
    std::uint64_t epoch = 0; ///< which watch order reports its loss (older ones are stale)
    std::int64_t proved_ms = 0; ///< when it proved the secret (Unix ms)
  };
  std::unordered_map<std::string, accepted_dialer> accepted_; ///< by key, trusted ones only
  /// By key: when an envelope (or heartbeat) last came over the link (Unix ms). A gap starts
  /// there, not when the loss was noticed: a link that died quietly is reported late.
  std::unordered_map<std::string, std::int64_t> last_heard_;
  std::uint64_t next_epoch_ = 0;
  caf::actor watch_; ///< the link watch (link_watch below)
  /// A peer whose link (either direction) dropped: since when (Unix ms), its node id, and the
  /// configured host:port of our link to it ("" for a peer that only dialed us). The peer
  /// sends to us over either direction, so the gap ends when one of them is back (end_gaps):
  /// our link to the same host:port (the peer may have restarted under another node id) or
  /// any link with the same node id.
  struct link_gap {
    std::int64_t lost_at = 0;
    std::string node;
    std::string where;
  };
  std::vector<link_gap> gaps_; ///< oldest first, at most max_gaps
  std::atomic<std::int64_t> last_drop_log_{0}; ///< enqueue runs on any thread
  inbound_bound mailbox_; ///< the network's messages in the mailbox (enqueue takes, arrived gives)
  std::int64_t last_refusal_log_ = 0;
  int refusals_this_second_ = 0;
};

/// Watches the links peers dialed to the gatekeeper (it cannot monitor them itself: it refuses
/// down messages, which a remote can forge): monitors each peer it is told to watch
/// (gate_order::watch) and reports each drop as gate_order::dialer_lost with the order's epoch.
/// Local only: it never sends to the network, so no remote learns its address.
caf::behavior link_watch(caf::event_based_actor* self, caf::actor_addr gate);

/// Whether `content` may enter the gatekeeper's mailbox (the shapes above).
[[nodiscard]] bool admitted_at_gate(const caf::type_erased_tuple& content);

/// The bytes of the strings in `content`: what a message from the network holds in the mailbox.
[[nodiscard]] std::size_t network_bytes(const caf::type_erased_tuple& content);

} // namespace comb::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::gate_order)
