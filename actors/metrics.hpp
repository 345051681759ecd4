// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "storage/membership.hpp"

namespace comb::actors {

/// A Prometheus histogram of durations with fixed buckets (seconds), lock-free.
class latency_histogram {
public:
  static constexpr std::array<double, 12> bounds{0.001, 0.002, 0.005, 0.01, 0.025, 0.05,
                                                 0.1,   0.25,  0.5,   1.0,  2.5,   5.0};

  void observe(double seconds) noexcept;

  /// `name_bucket{le=...}`, `name_sum` and `name_count` lines.
  void render(std::string& out, const char* name, const char* help) const;

private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> micros_sum_{0};
};

/// Membership writes by write path and outcome (storage::membership_change x outcome).
inline constexpr std::size_t membership_paths = storage::membership_change_count;
inline constexpr std::size_t membership_outcomes = storage::membership_outcome_count;

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
  std::atomic<std::uint64_t> bridge_unauthenticated{0};
  std::atomic<std::uint64_t> cluster_dropped_messages{0};
  std::atomic<std::uint64_t> list_writes{0};
  std::array<std::array<std::atomic<std::uint64_t>, membership_outcomes>, membership_paths>
    membership_writes{};
  latency_histogram req_latency;
  latency_histogram commit_latency;
  latency_histogram membership_latency;
  /// More lines computed at scrape time (Redis link counters, members per community).
  std::function<std::string()> scrape_extras;

  /// Prometheus text exposition format.
  [[nodiscard]] std::string render() const;
};

/// Adds one, relaxed; the counters need no ordering with anything else.
template <class T>
inline void bump(std::atomic<T>& counter, T by = 1) noexcept {
  counter.fetch_add(by, std::memory_order_relaxed);
}

} // namespace comb::actors
