// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/bridge/bridge_actor.hpp"
#include "actors/bridge/redis_transport.hpp"
#include "conf/settings.hpp"

namespace comb::actors {

/// The pod's way to the other pods: its bridge actor and whatever transports are configured.
struct pod_bridge {
  caf::actor actor;
  caf::actor gate; ///< the gatekeeper on the cluster port; null without cluster links
  std::string node_id;
  std::shared_ptr<redis_transport> redis;
  std::vector<caf::actor> connectors;
  std::size_t cluster_peers = 0;
  std::uint16_t cluster_port = 0; ///< bound on COMB_CLUSTER_LISTEN (the real one for port 0)

  /// The bridge actor when it has somewhere to send (Redis or cluster links), else null: a
  /// single pod would encode and sign an envelope per event for nobody, one more actor hop.
  [[nodiscard]] caf::actor publisher() const { return redis || gate ? actor : caf::actor{}; }

  /// "" when every configured transport works; otherwise what does not (for /readyz).
  [[nodiscard]] std::string problem(const relay_metrics& metrics) const;

  /// Prometheus lines of the Redis link (published, failed, received, reconnects).
  [[nodiscard]] std::string render_metrics() const;

  /// Waits until what was sent to the bridge actor so far has gone to Redis and Redis answered,
  /// or `wait` passes: the last events of a stopping pod's writers reach the other pods.
  void drain(caf::scoped_actor& self, std::chrono::milliseconds wait) const;

  /// Stops the transports (before the io_context stops) and the actors.
  void stop(caf::scoped_actor& self);
};

/// Spawns the bridge actor with `args`, starts Redis when `COMB_REDIS_URL` is set, publishes the
/// bridge for CAF peers on `COMB_CLUSTER_LISTEN` and links to `COMB_CLUSTER_PEERS`. Nothing,
/// with `error` set, on a start-up problem.
[[nodiscard]] std::optional<pod_bridge> start_bridge(caf::actor_system& system,
                                                     boost::asio::io_context& io,
                                                     const conf::relay_settings& settings,
                                                     bridge_args args, std::string& error);

/// Why the bridge cannot start with these settings (no or a short COMB_CLUSTER_SECRET with Redis
/// or cluster links; TLS files that do not load or do not chain to the CA), or nothing. Checked
/// before the database and the actor system are touched.
[[nodiscard]] std::optional<std::string> bridge_settings_problem(const conf::relay_settings& settings);

/// Whether the settings ask for CAF cluster links (the actor system must then load the io
/// middleman before it starts).
[[nodiscard]] bool wants_cluster(const conf::relay_settings& settings);

} // namespace comb::actors
