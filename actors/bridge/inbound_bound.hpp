// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstddef>

namespace comb::actors {

/// What the network has queued for an actor and the actor has not looked at yet: envelopes from
/// Redis or cluster peers on their way to the bridge, messages from peers in the gatekeeper's
/// mailbox. CAF mailboxes have no bound, and a hostile Redis (anyone who may PUBLISH to it) or
/// peer could send faster than the checks run; past the bound a message is dropped and counted
/// by the caller. Any thread takes; the actor gives back what it took once it handled it.
class inbound_bound {
public:
  /// Defaults: a message as large as the largest envelope (64 MiB, a list of a very large
  /// community) always fits while nothing else waits.
  explicit inbound_bound(std::size_t max_messages = 10'000,
                         std::size_t max_bytes = 256u * 1024 * 1024)
    : max_messages_(max_messages), max_bytes_(max_bytes) {}

  /// Takes a place for one message of `bytes`; false when the bound is reached (one message
  /// no larger than the bound is always let in while nothing is queued).
  [[nodiscard]] bool try_take(std::size_t bytes) noexcept {
    std::size_t queued = messages_.fetch_add(1, std::memory_order_acq_rel);
    std::size_t held = bytes_.fetch_add(bytes, std::memory_order_acq_rel);
    if (bytes <= max_bytes_ && (queued == 0 || (queued < max_messages_ && held + bytes <= max_bytes_)))
      return true;
    give_back(bytes);
    return false;
  }

  void give_back(std::size_t bytes) noexcept {
    messages_.fetch_sub(1, std::memory_order_acq_rel);
    bytes_.fetch_sub(bytes, std::memory_order_acq_rel);
  }

  [[nodiscard]] std::size_t messages() const noexcept {
    return messages_.load(std::memory_order_acquire);
  }

  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_.load(std::memory_order_acquire); }

private:
  std::size_t max_messages_;
  std::size_t max_bytes_;
  std::atomic<std::size_t> messages_{0};
  std::atomic<std::size_t> bytes_{0};
};

} // namespace comb::actors
