// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>
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
  std::string cluster_secret;              ///< MACs every envelope (Redis and CAF)
  std::shared_ptr<relay_metrics> metrics;
};

/// Tells the bridge which gatekeeper carries its envelopes to CAF peers.
struct bridge_gate {
  caf::actor gate;
};

struct bridge_state {
  bridge_args args;
  /// The gatekeeper (actors/bridge/gatekeeper.hpp), when cluster links are configured.
  caf::actor gate;
  /// Lists written at start-up, pushed once a transport is ready.
  std::vector<committed_event> startup;
  bool startup_sent_to_redis = false;
  /// When a dropped envelope was last logged (seconds), so a flood gives one line a second.
  std::int64_t last_drop_log = 0;
  static inline const char* name = "bridge";
};

/// One per pod. Sends every locally accepted event, as an envelope with a MAC, to the other pods
/// (Redis and/or the gatekeeper's CAF peers), and hands what they send to local fan-out only,
/// never to storage. Drops envelopes without a valid MAC and its own echoes; the fan-out drops
/// anything it has already delivered. Member caches never follow what arrives here: the database
/// is the authority (actors/community/access_watcher.hpp). Never reachable from the network:
/// only the gatekeeper talks to remote nodes.
caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, bridge_args args);

} // namespace comb::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::bridge_gate)
