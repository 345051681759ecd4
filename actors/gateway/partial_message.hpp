// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstddef>

namespace comb::actors {

/// The bytes of the message a connection has begun and not finished, counted pod-wide: each
/// connection may hold up to the message bound, but ten thousand connections each holding a
/// fragment (cheap to send compressed) would be gigabytes. Released when the message is
/// finished or the connection ends.
class partial_message {
public:
  explicit partial_message(std::atomic<std::size_t>& pod) : pod_(pod) {}
  ~partial_message() { finished(); }
  partial_message(const partial_message&) = delete;
  partial_message& operator=(const partial_message&) = delete;

  /// Counts `bytes` more; false when the pod then holds more than `bound`.
  [[nodiscard]] bool grew(std::size_t bytes, std::size_t bound) {
    held_ += bytes;
    return pod_.fetch_add(bytes, std::memory_order_relaxed) + bytes <= bound;
  }

  /// A message that arrived whole held nothing: the shared counter is not touched for it.
  void finished() {
    if (held_ == 0)
      return;
    pod_.fetch_sub(held_, std::memory_order_relaxed);
    held_ = 0;
  }

private:
  std::atomic<std::size_t>& pod_;
  std::size_t held_ = 0;
};

} // namespace comb::actors
