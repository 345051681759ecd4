// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/bridge/bridge_transport.hpp"
#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"

namespace comb::actors {

struct bridge_args {
  std::string node_id;
  caf::actor fanout;
  std::shared_ptr<community_registry> registry;
  protocol::bytes32 relay_pubkey{};
  std::shared_ptr<bridge_transport> redis; ///< may be null (no Redis)
  std::string cluster_secret;              ///< peers must prove it (CAF transport)
  std::shared_ptr<relay_metrics> metrics;
};

struct bridge_state {
  bridge_args args;
  /// CAF peers that proved the secret to us: their envelopes are accepted.
  std::set<caf::actor_addr> trusted_senders;
  /// Outstanding challenges we sent, by the address that said hello.
  std::unordered_map<caf::actor_addr, std::string> challenges;
  /// Peers that accepted our proof: our envelopes go to them.
  std::vector<caf::actor> peers;
  /// Lists written at start-up, pushed once a transport is ready.
  std::vector<committed_event> startup;
  bool startup_sent_to_redis = false;
  static inline const char* name = "bridge";
};

/// One per pod. Sends every locally accepted event to the other pods (Redis and/or CAF peers),
/// and hands what they send to local fan-out only, never to storage. Drops its own echoes;
/// the fan-out drops anything it has already delivered. Member caches never follow what arrives
/// here: the database is the authority (actors/community/access_watcher.hpp).
caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, bridge_args args);

/// The proof a peer sends for `nonce`: SHA-256 of secret, nonce and node id, hex.
[[nodiscard]] std::string cluster_proof(const std::string& secret, const std::string& nonce,
                                        const std::string& node_id);

} // namespace comb::actors
