// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <string>

#include "actors/bridge/bridge_transport.hpp"
#include "actors/bridge/inbound_bound.hpp"
#include "actors/metrics.hpp"
#include "storage/redis/redis_pubsub.hpp"

namespace comb::actors {

/// The Redis side of the bridge: envelopes published on one channel, and every envelope on it
/// handed to the bridge actor. Runs on the pod's I/O threads; never blocks them.
class redis_transport final : public bridge_transport {
public:
  redis_transport(boost::asio::io_context& io, std::string url, std::string channel);

  /// Connects (asynchronously); the bridge actor gets what arrives and, when the link is up
  /// after a loss, (ready_atom, lost at in Unix ms). Nothing, or a start-up error.
  /// What arrives takes a place in `inbound` first (the bridge gives it back); past its bound
  /// it is dropped and counted in `metrics`.
  [[nodiscard]] std::optional<std::string> start(caf::actor bridge,
                                                 std::shared_ptr<inbound_bound> inbound,
                                                 std::shared_ptr<relay_metrics> metrics);

  void stop();

  /// Waits (off the io threads) until what was published is answered, or `wait` passes.
  void drain(std::chrono::milliseconds wait);

  void publish(std::string envelope) override;

  [[nodiscard]] std::string problem() const override;

  [[nodiscard]] const storage::redis_stats& stats() const;

private:
  boost::asio::io_context& io_;
  storage::redis_pubsub::options options_;
  std::unique_ptr<storage::redis_pubsub> link_;
  /// When the link was lost (Unix ms; 0 while up): the bridge learns the gap when it is back.
  /// Only touched by the link's state callback (one strand).
  std::int64_t lost_at_ms_ = 0;
};

} // namespace comb::actors
