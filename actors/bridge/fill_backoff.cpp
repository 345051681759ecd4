// SPDX-License-Identifier: MIT
#include "actors/bridge/fill_backoff.hpp"

#include <algorithm>

namespace comb::actors {

std::chrono::milliseconds fill_backoff::next(clock::time_point now) {
  if (last_ && now - *last_ > 2 * longest_)
    next_ = first_;
  last_ = now;
  const auto wait = next_;
  next_ = std::min(2 * next_, longest_);
  return wait;
}

} // namespace comb::actors
