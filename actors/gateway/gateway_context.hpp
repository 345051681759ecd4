// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/connection/connection.hpp"
#include "actors/gateway/community_directory.hpp"
#include "actors/gateway/community_pubkeys.hpp"
#include "actors/metrics.hpp"
#include "actors/storage/reader_waits.hpp"
#include "conf/settings.hpp"

namespace comb::actors {

/// What the socket edge needs from the rest of the pod. Built once at start, shared read-only
/// by every session (except the owner counter).
struct gateway_context {
  caf::actor_system* system = nullptr;
  conf::relay_settings settings;
  /// NIP-11 `self` of each community (its own signing key).
  std::shared_ptr<community_pubkeys> signers;
  caf::actor fanout;
  std::vector<caf::actor> writers; ///< never empty; a connection keeps one
  caf::actor directory;
  caf::actor membership_writer;
  caf::actor bridge;
  caf::actor management; ///< NIP-86; unset: POSTs are answered 503
  std::shared_ptr<community_registry> registry;
  std::vector<caf::actor> readers;
  std::shared_ptr<reader_waits> readers_waiting;
  std::shared_ptr<relay_metrics> metrics;
  std::shared_ptr<community_directory> communities;
  /// What every connection's subscriptions hold in the fan-out (settings' max_pod_filters).
  std::shared_ptr<pod_filter_holdings> pod_filters;
  std::shared_ptr<shared_rate_limiter> vanish_requests =
    std::make_shared<shared_rate_limiter>(pod_vanish_rate, pod_vanish_burst);
  /// "" when the pod is ready to serve; otherwise why it is degraded (shown on /readyz). `true`
  /// asks for the detail (Postgres's own error text, which names hosts and users): only the
  /// metrics listener shows it; the client port says which service is away.
  std::function<std::string(bool detailed)> readiness;
  std::atomic<std::uint64_t> next_owner{1};
  /// Bytes of messages begun and not finished, over every connection (settings'
  /// max_pod_partial_bytes bounds it).
  std::atomic<std::size_t> partial_message_bytes{0};
  /// Bytes of HTTP request bodies being read, over every connection (server.cpp bounds it).
  std::atomic<std::size_t> request_body_bytes{0};
  /// Host lookups sent to the directory actor and not answered yet.
  std::atomic<std::size_t> host_lookups_waiting{0};
  /// NIP-86 calls waiting on the management actor (answer_management).
  std::atomic<std::size_t> management_calls_waiting{0};
  /// Invite REQs waiting on the membership writer (connection_args::invites_waiting).
  std::shared_ptr<std::atomic<std::size_t>> invites_waiting = std::make_shared<std::atomic<std::size_t>>(0);
};

} // namespace comb::actors
