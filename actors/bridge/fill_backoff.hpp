// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <optional>

namespace comb::actors {

/// How long the bridge waits before it asks again for a gap fill that did not bring what it
/// should: Postgres did not answer the filler, or bridged events could not wait in the hold
/// (they expired, or did not fit). Each retry waits twice the last, from `first` to `longest`,
/// and a retry asked after `2 × longest` without one starts again from `first`. A pod that
/// stays behind the database, whose fills' events expire in the hold each time, then reads
/// every community once a minute, never in a loop. Plain class: the bridge actor drives it.
class fill_backoff {
public:
  using clock = std::chrono::steady_clock;

  explicit fill_backoff(std::chrono::milliseconds first = std::chrono::seconds(1),
                        std::chrono::milliseconds longest = std::chrono::seconds(64))
    : first_(first), longest_(longest), next_(first) {}

  /// The wait before the retry asked at `now`.
  [[nodiscard]] std::chrono::milliseconds next(clock::time_point now);

private:
  std::chrono::milliseconds first_;
  std::chrono::milliseconds longest_;
  std::chrono::milliseconds next_;
  std::optional<clock::time_point> last_;
};

} // namespace comb::actors
