// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>

namespace comb::actors {

/// Unix time in seconds, as Nostr's created_at counts it.
[[nodiscard]] inline std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// Seconds on a clock that never jumps: for rates, windows and latencies.
[[nodiscard]] inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace comb::actors
