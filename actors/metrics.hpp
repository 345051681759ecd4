// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace comb::actors {

/// Process-wide counters, written from any thread with relaxed atomics and rendered as
/// Prometheus text on /metrics.
struct relay_metrics {
  std::atomic<std::int64_t> connections_current{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> messages_event{0};
  std::atomic<std::uint64_t> messages_req{0};
  std::atomic<std::uint64_t> messages_count{0};
  std::atomic<std::uint64_t> messages_close{0};
  std::atomic<std::uint64_t> messages_auth{0};
  std::atomic<std::uint64_t> messages_invalid{0};
  std::atomic<std::uint64_t> events_accepted{0};
  std::atomic<std::uint64_t> events_rejected{0};
  std::atomic<std::uint64_t> events_stored{0};
  std::atomic<std::uint64_t> events_duplicate{0};
  std::atomic<std::uint64_t> events_failed{0};
  std::atomic<std::uint64_t> deliveries{0};
  std::atomic<std::uint64_t> slow_reader_disconnects{0};
  std::atomic<std::uint64_t> oversize_disconnects{0};
  std::atomic<std::uint64_t> write_batches{0};
  std::atomic<std::uint64_t> bridge_published{0};
  std::atomic<std::uint64_t> bridge_received{0};
  std::atomic<std::uint64_t> bridge_rejected{0};
  std::atomic<std::uint64_t> bridge_refused_peers{0};
  std::atomic<std::int64_t> cluster_peers_linked{0};

  /// Prometheus text exposition format.
  [[nodiscard]] std::string render() const;
};

/// Adds one, relaxed; the counters need no ordering with anything else.
template <class T>
inline void bump(std::atomic<T>& counter, T by = 1) noexcept {
  counter.fetch_add(by, std::memory_order_relaxed);
}

} // namespace comb::actors
