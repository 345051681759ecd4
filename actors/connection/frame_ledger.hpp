// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "actors/metrics.hpp"

namespace comb::actors {

/// Bytes of messages (each with `message_overhead`) a socket handed to its connection actor and
/// the actor has not handled, for the connection and over the pod (relay_metrics::
/// inbound_frame_bytes). Shared by the socket and the actor: what neither gave back when both
/// are gone (the actor failed with messages in its mailbox, which are dropped unread) leaves the
/// pod's count then, so a failure never leaks it.
class frame_ledger {
public:
  explicit frame_ledger(std::shared_ptr<relay_metrics> metrics) : metrics_(std::move(metrics)) {}
  ~frame_ledger() { metrics_->inbound_frame_bytes.fetch_sub(pending_.load(), std::memory_order_relaxed); }
  frame_ledger(const frame_ledger&) = delete;
  frame_ledger& operator=(const frame_ledger&) = delete;

  /// What a message in the actor's mailbox holds beyond its text: the mailbox element, the
  /// message and the string. An empty frame is 6 bytes on the wire: counted by its text alone,
  /// a client sending them would never be paused while the mailbox grew.
  static constexpr std::size_t message_overhead = 256;

  /// What a message of `bytes` counts for.
  [[nodiscard]] static constexpr std::size_t charge(std::size_t bytes) noexcept { return bytes + message_overhead; }

  /// The socket handed over a message of `bytes`.
  void handed(std::size_t bytes) {
    pending_.fetch_add(charge(bytes), std::memory_order_relaxed);
    metrics_->inbound_frame_bytes.fetch_add(charge(bytes), std::memory_order_relaxed);
  }

  /// The actor is done with a message of `bytes`.
  void handled(std::size_t bytes) {
    pending_.fetch_sub(charge(bytes), std::memory_order_release);
    metrics_->inbound_frame_bytes.fetch_sub(charge(bytes), std::memory_order_release);
  }

  [[nodiscard]] std::atomic<std::size_t>& pending() noexcept { return pending_; }

private:
  std::shared_ptr<relay_metrics> metrics_;
  std::atomic<std::size_t> pending_{0};
};

} // namespace comb::actors
