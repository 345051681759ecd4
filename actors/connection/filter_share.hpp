// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "actors/connection/filter_holding.hpp"
#include "actors/connection/ip_table.hpp"
#include "actors/metrics.hpp"
#include "protocol/rejection.hpp"

namespace comb::actors {

/// What every connection of the pod holds in the fan-out index, against the pod's bounds: the
/// per-connection and per-address bounds times the sockets and addresses a pod admits is
/// gigabytes of index, and addresses are cheap (an IPv6 holder has thousands of /64s).
/// Thread-safe; the totals are the gauges `comb_fanout_filters_held`, `comb_fanout_filter_values_held`.
class pod_filter_holdings {
public:
  pod_filter_holdings(std::shared_ptr<relay_metrics> metrics, filter_holding most)
    : metrics_(std::move(metrics)), most_(most) {
    most_.broad = static_cast<std::size_t>(-1); // bounded per connection and per address
  }

  [[nodiscard]] bool try_hold(const filter_holding& more) {
    std::lock_guard lock(mutex_);
    if (held_.exceeded(more, most_))
      return false;
    held_ += more;
    publish();
    return true;
  }

  void release(const filter_holding& fewer) {
    std::lock_guard lock(mutex_);
    held_ -= fewer;
    publish();
  }

  [[nodiscard]] filter_holding held() const {
    std::lock_guard lock(mutex_);
    return held_;
  }

  [[nodiscard]] const filter_holding& most() const noexcept { return most_; }

private:
  void publish() {
    metrics_->fanout_filters_held.store(static_cast<std::int64_t>(held_.filters), std::memory_order_relaxed);
    metrics_->fanout_filter_values_held.store(static_cast<std::int64_t>(held_.values), std::memory_order_relaxed);
  }

  std::shared_ptr<relay_metrics> metrics_;
  filter_holding most_;
  mutable std::mutex mutex_;
  filter_holding held_;
};

/// Which bound refused a connection's filters: its address's (and which count), or the pod's.
struct filter_share_refusal {
  bool pod = false;
  filter_bound bound = filter_bound::filters;
};

/// What one connection holds in its address's and the pod's counts: resized as its subscriptions
/// change, given back when the connection ends. Without a budget or a pod count (tests) that
/// bound does not apply.
class filter_share {
public:
  filter_share(std::shared_ptr<ip_budget> address, filter_holding address_most,
               std::shared_ptr<pod_filter_holdings> pod)
    : address_(std::move(address)), address_most_(address_most), pod_(std::move(pod)) {}
  ~filter_share() { give_back(held_); }
  filter_share(filter_share&& other) noexcept
    : address_(std::move(other.address_)), address_most_(other.address_most_), pod_(std::move(other.pod_)),
      held_(std::exchange(other.held_, {})) {}
  filter_share& operator=(filter_share&&) = delete;

  /// Makes this connection's share `to`; on a refusal the share is unchanged.
  [[nodiscard]] std::optional<filter_share_refusal> resize(const filter_holding& to) {
    const auto more = held_.grown_to(to);
    if (more != filter_holding{}) {
      if (address_)
        if (auto bound = address_->try_hold_filters(more, address_most_))
          return filter_share_refusal{false, *bound};
      if (pod_ && !pod_->try_hold(more)) {
        if (address_)
          address_->release_filters(more);
        return filter_share_refusal{true};
      }
    }
    if (const auto fewer = held_.shrunk_to(to); fewer != filter_holding{})
      give_back(fewer);
    held_ = to;
    return std::nullopt;
  }

  [[nodiscard]] const filter_holding& address_most() const noexcept { return address_most_; }

private:
  void give_back(const filter_holding& fewer) {
    if (address_)
      address_->release_filters(fewer);
    if (pod_)
      pod_->release(fewer);
  }

  std::shared_ptr<ip_budget> address_;
  filter_holding address_most_;
  std::shared_ptr<pod_filter_holdings> pod_;
  filter_holding held_;
};

/// What a REQ refused by `refused` is answered (CLOSED `rate-limited:`).
[[nodiscard]] protocol::rejection refusal_of(const filter_share_refusal& refused, const filter_holding& address_most);

} // namespace comb::actors
