// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

#include "tools/watch/alert_batcher.hpp"

namespace comb::watch {

/// Turns kind-8000 hints into list refetches: one refetch 500 ms after the last hint of a
/// burst. The cap keeps a steady stream of hints from postponing the refetch for ever; the live
/// 13534 subscription delivers the lists meanwhile anyway.
class refetch_debouncer {
public:
  explicit refetch_debouncer(std::chrono::milliseconds quiet = std::chrono::milliseconds(500),
                             std::chrono::milliseconds cap = std::chrono::milliseconds(2000))
    : quiet_(quiet), cap_(cap) {}

  void hint(instant now) {
    if (!due_)
      burst_started_ = now;
    due_ = std::min(now + quiet_, burst_started_ + cap_);
  }

  [[nodiscard]] std::optional<instant> due() const noexcept { return due_; }

  /// True once per burst, when its refetch is due.
  [[nodiscard]] bool take_due(instant now) {
    if (!due_ || now < *due_)
      return false;
    due_.reset();
    return true;
  }

private:
  std::chrono::milliseconds quiet_;
  std::chrono::milliseconds cap_;
  instant burst_started_{};
  std::optional<instant> due_;
};

} // namespace comb::watch
