// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "actors/connection/filter_holding.hpp"
#include "actors/connection/rate_limiter.hpp"

namespace comb::actors {

/// What one client address may cost the pod, summed over all of its connections.
struct ip_limits {
  double frame_rate = 1000;   ///< frame tokens per second (the connection bucket's units)
  double frame_burst = 4000;
  double request_rate = 20;   ///< HTTP requests and upgrades per second
  double request_burst = 100;
  std::size_t max_connections = 100; ///< sockets open at once, counted from accept
  std::size_t max_tracked = 100000;  ///< addresses remembered at once (a bound on this table)
  /// Milliseconds of the storage readers' statements per second, and at once, its REQs and
  /// COUNTs may take (charged once run; past them its queued queries are refused).
  double database_ms_rate = 500;
  double database_ms_burst = 20000;
};

/// The shared buckets of one address. Thread-safe: its connections run on any thread.
class ip_budget {
public:
  explicit ip_budget(const ip_limits& limits)
    : frames_(limits.frame_rate, limits.frame_burst),
      requests_(limits.request_rate, limits.request_burst),
      database_(limits.database_ms_rate, limits.database_ms_burst) {}

  [[nodiscard]] bool try_take_frames(double now, double cost) {
    std::lock_guard lock(mutex_);
    return frames_.try_take(now, cost);
  }

  /// Milliseconds of the storage readers' statements its queries took, once run.
  void charge_database(double now, double ms) {
    std::lock_guard lock(mutex_);
    database_.charge(now, ms);
  }

  /// Whether its queries took more of the readers than its database bucket holds: the ones it
  /// queued meanwhile are refused as the readers take them up.
  [[nodiscard]] bool database_in_debt(double now) {
    std::lock_guard lock(mutex_);
    return database_.in_debt(now);
  }

  [[nodiscard]] bool try_take_request(double now) {
    std::lock_guard lock(mutex_);
    return requests_.try_take(now);
  }

  /// One more request body read from this address at once, if fewer than `most` are: the pod's
  /// budget for bodies in progress is reserved by their declared lengths, and one address
  /// trickling many (behind a proxy, from any number of sockets) would hold all of it.
  [[nodiscard]] bool try_begin_body(std::size_t most) {
    std::lock_guard lock(mutex_);
    if (bodies_ >= most)
      return false;
    ++bodies_;
    return true;
  }

  void end_body() {
    std::lock_guard lock(mutex_);
    if (bodies_ > 0)
      --bodies_;
  }

  /// `more` of what subscriptions hold in the fan-out (filter_holding), summed over this
  /// address's connections, if the sum stays within `most`; else the count it would pass. The
  /// per-connection bounds times the sockets of one address is thousands of filters, each
  /// checked against every event filed under what it names.
  [[nodiscard]] std::optional<filter_bound> try_hold_filters(const filter_holding& more,
                                                             const filter_holding& most) {
    std::lock_guard lock(mutex_);
    if (auto bound = filters_.exceeded(more, most))
      return bound;
    filters_ += more;
    return std::nullopt;
  }

  void release_filters(const filter_holding& fewer) {
    std::lock_guard lock(mutex_);
    filters_ -= fewer;
  }

  [[nodiscard]] filter_holding filters_held() {
    std::lock_guard lock(mutex_);
    return filters_;
  }

  /// `bytes` more of events waiting for the pod's writers from this address, if the sum stays
  /// within `most`: sixteen sockets at their own share filled the pod's bound, and every other
  /// client's events were refused while the writers worked through them.
  [[nodiscard]] bool try_hold_storage(std::int64_t bytes, std::int64_t most) {
    std::lock_guard lock(mutex_);
    if (storage_ > 0 && storage_ + bytes > most)
      return false;
    storage_ += bytes;
    return true;
  }

  void release_storage(std::int64_t bytes) {
    std::lock_guard lock(mutex_);
    storage_ -= std::min(storage_, bytes);
  }

  [[nodiscard]] std::int64_t storage_held() {
    std::lock_guard lock(mutex_);
    return storage_;
  }

  /// Both buckets full and nothing held: forgetting this address now gives it nothing it
  /// would not have anyway.
  [[nodiscard]] bool idle(double now) {
    std::lock_guard lock(mutex_);
    return bodies_ == 0 && filters_ == filter_holding{} && storage_ == 0 && frames_.full(now) && requests_.full(now)
           && database_.full(now);
  }

private:
  std::mutex mutex_;
  std::size_t bodies_ = 0;
  filter_holding filters_;
  std::int64_t storage_ = 0;
  rate_limiter frames_;
  rate_limiter requests_;
  rate_limiter database_;
};

/// An event's weight in its address's count of events waiting for the writers (ip_budget::
/// try_hold_storage), given back when the last copy of its OK route goes: answered, or dropped
/// with a writer that failed.
class address_storage_hold {
public:
  address_storage_hold(std::shared_ptr<ip_budget> budget, std::int64_t bytes)
    : budget_(std::move(budget)), bytes_(bytes) {}
  ~address_storage_hold() { budget_->release_storage(bytes_); }
  address_storage_hold(const address_storage_hold&) = delete;
  address_storage_hold& operator=(const address_storage_hold&) = delete;

private:
  std::shared_ptr<ip_budget> budget_;
  std::int64_t bytes_;
};

/// Client addresses and what each holds: its buckets and its open sockets. Bounded: addresses
/// with no socket and full buckets are forgotten when the table grows, and past `max_tracked`
/// live addresses a new one is refused.
class ip_table : public std::enable_shared_from_this<ip_table> {
public:
  explicit ip_table(ip_limits limits) : limits_(limits) {}

  /// One open socket of an address; releases its place when destroyed.
  class slot {
  public:
    slot(std::shared_ptr<ip_table> table, std::string ip, std::shared_ptr<ip_budget> budget)
      : table_(std::move(table)), ip_(std::move(ip)), budget_(std::move(budget)) {}
    ~slot();
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;

    [[nodiscard]] const std::shared_ptr<ip_budget>& budget() const noexcept { return budget_; }
    [[nodiscard]] const std::string& ip() const noexcept { return ip_; }

  private:
    std::shared_ptr<ip_table> table_;
    std::string ip_;
    std::shared_ptr<ip_budget> budget_;
  };

  enum class refusal { none, too_many_connections, too_many_addresses };

  /// A place for one more socket of `ip`, or why not. Check and count are one step under the
  /// lock, so concurrent accepts cannot overshoot the cap.
  [[nodiscard]] std::unique_ptr<slot> open(const std::string& ip, double now, refusal& why);

  /// The buckets of `ip` without holding a socket place (plain HTTP requests); null when the
  /// table is full.
  [[nodiscard]] std::shared_ptr<ip_budget> budget(const std::string& ip, double now);

  [[nodiscard]] std::size_t tracked() const;

  /// Open sockets of `ip` right now.
  [[nodiscard]] std::size_t connections_of(const std::string& ip) const;

  [[nodiscard]] const ip_limits& limits() const noexcept { return limits_; }

private:
  struct entry {
    std::shared_ptr<ip_budget> budget;
    std::size_t connections = 0;
  };

  entry* find_or_add(const std::string& ip, double now); // under mutex_
  void sweep(double now);                                // under mutex_
  void release(const std::string& ip);

  ip_limits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> entries_;
  std::size_t sweep_at_ = 1024;
  double last_sweep_ = -1e18;
};

/// The pod-wide count of sockets, from accept to close, with its cap. `try_enter` counts and
/// checks in one atomic step.
class socket_gate {
public:
  explicit socket_gate(std::size_t capacity) : capacity_(capacity) {}

  [[nodiscard]] bool try_enter() {
    if (count_.fetch_add(1, std::memory_order_acq_rel) >= capacity_) {
      count_.fetch_sub(1, std::memory_order_acq_rel);
      return false;
    }
    return true;
  }

  void leave() { count_.fetch_sub(1, std::memory_order_acq_rel); }

  [[nodiscard]] std::size_t open() const { return count_.load(std::memory_order_relaxed); }

private:
  std::size_t capacity_;
  std::atomic<std::size_t> count_{0};
};

/// A place taken from a socket_gate (try_enter), given back when this ends.
class gate_place {
public:
  explicit gate_place(socket_gate& gate) : gate_(gate) {}
  ~gate_place() { gate_.leave(); }
  gate_place(const gate_place&) = delete;
  gate_place& operator=(const gate_place&) = delete;

private:
  socket_gate& gate_;
};

} // namespace comb::actors
