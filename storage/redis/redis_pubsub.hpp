// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace comb::storage {

/// Counters of one Redis link, readable from any thread.
struct redis_stats {
  std::atomic<std::uint64_t> published{0};
  std::atomic<std::uint64_t> publish_failed{0}; ///< not sent: Redis down or the send failed
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> oversized{0}; ///< received past options::max_message_bytes: dropped
  std::atomic<std::uint64_t> reconnects{0};
  std::atomic<bool> refused_login{false}; ///< the last AUTH or SELECT was refused (bad credentials)
};

/// Publish/subscribe on one Redis channel for cross-pod delivery (hiredis async, driven by
/// Asio, so no thread ever blocks on Redis). Two connections: a dedicated subscriber and a
/// publisher. When Redis is unreachable it keeps trying with exponential backoff (bounded),
/// counts what it could not publish, and reports up/down through `on_state`; it never throws
/// and never buffers without bound.
class redis_pubsub {
public:
  struct options {
    std::string url;     ///< redis://[user:password@]host:port[/db]; AUTH and SELECT on every connect
    std::string channel; ///< e.g. "comb:events"
    std::chrono::milliseconds min_backoff{100};
    std::chrono::milliseconds max_backoff{5000};
    /// A message received larger than this is dropped before it is copied (counted: oversized).
    std::size_t max_message_bytes = std::numeric_limits<std::size_t>::max();
  };

  /// `on_message` runs on an io thread for each payload received on the channel (including
  /// this process's own: the caller drops its echoes). `on_state(true)` once both connections
  /// are ready, `on_state(false)` when either is lost, and when Redis first refuses the
  /// credentials (stats().refused_login tells that case apart).
  redis_pubsub(boost::asio::io_context& io, options opts,
               std::function<void(std::string payload)> on_message,
               std::function<void(bool up)> on_state);
  ~redis_pubsub();

  redis_pubsub(const redis_pubsub&) = delete;
  redis_pubsub& operator=(const redis_pubsub&) = delete;

  /// Starts connecting (asynchronously). A URL that cannot be parsed is reported here as an
  /// error message (a start-up error); nothing when it is fine.
  [[nodiscard]] std::optional<std::string> start();

  /// Publishes from any thread. Dropped and counted as failed while Redis is down.
  void publish(std::string payload);

  /// Waits until every PUBLISH accepted so far is answered, the link is lost, or `wait` passes:
  /// a stopping pod's last events reach the other pods. Returns at once on an io thread.
  void drain(std::chrono::milliseconds wait);

  /// Closes both connections; no callback runs after it returns (call from a non-io thread
  /// or the io thread; it must be called before the io_context is destroyed).
  void stop();

  [[nodiscard]] bool up() const noexcept;

  [[nodiscard]] const redis_stats& stats() const noexcept;

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace comb::storage
