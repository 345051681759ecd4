// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/fanout/subscription_index.hpp"
#include "actors/metrics.hpp"

namespace comb::actors {

/// What the fan-out needs: where history queries go, and the counters.
struct fanout_args {
  std::vector<caf::actor> readers;
  std::shared_ptr<relay_metrics> metrics;
};

struct fanout_state {
  fanout_args args;
  std::unordered_map<std::int64_t, subscription_index> communities;
  std::unordered_map<std::uint64_t, caf::actor> connections;
  /// Connections with subscriptions, by community, for revocation.
  std::unordered_map<std::int64_t, std::unordered_set<std::uint64_t>> subscribers;
  /// Ids delivered recently, whichever way they came (local, Redis, CAF peer): each event
  /// reaches a subscription once. Bounded: the oldest id is forgotten first.
  std::unordered_set<protocol::bytes32, protocol::bytes32_hash> recent;
  std::deque<protocol::bytes32> recent_order;
  static inline const char* name = "fanout";
};

/// The pod's live subscriptions. A subscribe registers the filters, then passes the history
/// query on to a storage reader, so the live part always exists before history is read.
/// A published event goes once to each connection with matching subscriptions.
caf::behavior fanout_actor(caf::stateful_actor<fanout_state>* self, fanout_args args);

} // namespace comb::actors
