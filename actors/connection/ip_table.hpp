// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

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
};

/// The shared buckets of one address. Thread-safe: its connections run on any thread.
class ip_budget {
public:
  explicit ip_budget(const ip_limits& limits)
    : frames_(limits.frame_rate, limits.frame_burst),
      requests_(limits.request_rate, limits.request_burst) {}

  [[nodiscard]] bool try_take_frames(double now, double cost) {
    std::lock_guard lock(mutex_);
    return frames_.try_take(now, cost);
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

  /// `more` filters without ids, authors, kinds or tags held in the fan-out by this address's
  /// connections, if the total stays within `most`: each is checked against every event of its
  /// community, and the per-connection bound times the sockets of one address is thousands.
  [[nodiscard]] bool try_hold_broad(std::size_t more, std::size_t most) {
    std::lock_guard lock(mutex_);
    if (broad_ + more > most)
      return false;
    broad_ += more;
    return true;
  }

  void release_broad(std::size_t fewer) {
    std::lock_guard lock(mutex_);
    broad_ -= std::min(broad_, fewer);
  }

  [[nodiscard]] std::size_t broad_held() {
    std::lock_guard lock(mutex_);
    return broad_;
  }

  /// Both buckets full and nothing held: forgetting this address now gives it nothing it
  /// would not have anyway.
  [[nodiscard]] bool idle(double now) {
    std::lock_guard lock(mutex_);
    return bodies_ == 0 && broad_ == 0 && frames_.full(now) && requests_.full(now);
  }

private:
  std::mutex mutex_;
  std::size_t bodies_ = 0;
  std::size_t broad_ = 0;
  rate_limiter frames_;
  rate_limiter requests_;
};

/// The broad filters one connection holds in its address's count: resized as its subscriptions
/// change, given back when the connection ends. Without a budget (tests) it holds any number.
class address_broad_share {
public:
  address_broad_share(std::shared_ptr<ip_budget> budget, std::size_t most)
    : budget_(std::move(budget)), most_(most) {}
  ~address_broad_share() {
    if (budget_)
      budget_->release_broad(held_);
  }
  address_broad_share(address_broad_share&& other) noexcept
    : budget_(std::move(other.budget_)), most_(other.most_), held_(std::exchange(other.held_, 0)) {}
  address_broad_share& operator=(address_broad_share&&) = delete;

  /// Makes this connection's share `count`; false, and the share unchanged, when growing it
  /// would take the address past its bound.
  [[nodiscard]] bool resize(std::size_t count) {
    if (budget_ && count > held_ && !budget_->try_hold_broad(count - held_, most_))
      return false;
    if (budget_ && count < held_)
      budget_->release_broad(held_ - count);
    held_ = count;
    return true;
  }

private:
  std::shared_ptr<ip_budget> budget_;
  std::size_t most_;
  std::size_t held_ = 0;
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
