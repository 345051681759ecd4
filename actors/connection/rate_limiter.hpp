// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <mutex>

namespace comb::actors {

/// Token bucket: `rate` tokens per second up to `burst`. Time is passed in, so tests need no clock.
class rate_limiter {
public:
  rate_limiter(double rate, double burst) : rate_(rate), burst_(burst), tokens_(burst) {}

  /// Takes `cost` tokens if there are that many at time `now_seconds`; a refused take costs
  /// nothing, so a client that waits gets through again.
  [[nodiscard]] bool try_take(double now_seconds, double cost = 1) {
    refill(now_seconds);
    if (tokens_ < cost)
      return false;
    tokens_ -= cost;
    return true;
  }

  /// Takes `cost` tokens for work already done, into debt of up to one burst: the bucket
  /// refuses its holder until the debt is paid back.
  void charge(double now_seconds, double cost) {
    refill(now_seconds);
    tokens_ = std::max(-burst_, tokens_ - cost);
  }

  /// Whether work already charged left the bucket in debt at `now_seconds`.
  [[nodiscard]] bool in_debt(double now_seconds) {
    refill(now_seconds);
    return tokens_ < 0;
  }

  /// True when the bucket is full again at `now_seconds` (its holder may be forgotten).
  [[nodiscard]] bool full(double now_seconds) {
    refill(now_seconds);
    return tokens_ >= burst_;
  }

private:
  void refill(double now_seconds) {
    if (now_seconds > last_)
      tokens_ = std::min(burst_, tokens_ + (now_seconds - last_) * rate_);
    last_ = std::max(last_, now_seconds);
  }

  double rate_;
  double burst_;
  double tokens_;
  double last_ = 0;
};

/// A rate_limiter shared by every connection of the pod (each takes from it on its own thread).
class shared_rate_limiter {
public:
  shared_rate_limiter(double rate, double burst) : bucket_(rate, burst) {}

  [[nodiscard]] bool try_take(double now_seconds, double cost = 1) {
    std::lock_guard lock(mutex_);
    return bucket_.try_take(now_seconds, cost);
  }

private:
  std::mutex mutex_;
  rate_limiter bucket_;
};

} // namespace comb::actors
