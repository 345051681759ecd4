// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>

namespace comb::actors {

/// Token bucket: `rate` tokens per second up to `burst`. Time is passed in, so tests need no clock.
class rate_limiter {
public:
  rate_limiter(double rate, double burst) : rate_(rate), burst_(burst), tokens_(burst) {}

  /// Takes one token if there is one at time `now_seconds`.
  [[nodiscard]] bool try_take(double now_seconds) {
    if (now_seconds > last_)
      tokens_ = std::min(burst_, tokens_ + (now_seconds - last_) * rate_);
    last_ = std::max(last_, now_seconds);
    if (tokens_ < 1)
      return false;
    tokens_ -= 1;
    return true;
  }

private:
  double rate_;
  double burst_;
  double tokens_;
  double last_ = 0;
};

} // namespace comb::actors
