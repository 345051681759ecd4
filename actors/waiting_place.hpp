// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace comb::actors {

/// A request's place among those waiting on one actor over the pod (the directory, the
/// management actor, the membership writer's invites: each does one thing at a time). Held for as long as the request waits and
/// given back however it ends; past `max` waiting, no place is taken and the request is answered
/// at once instead of queueing in front of real ones.
class waiting_place;

/// A place shared with a message: given back once the message has been handled (or dropped),
/// whatever became of its sender (share_place keeps the count alive as long).
using waiting_place_ptr = std::shared_ptr<waiting_place>;

class waiting_place {
public:
  waiting_place(std::atomic<std::size_t>& waiting, std::size_t max) noexcept
    : waiting_(waiting), taken_(waiting.fetch_add(1, std::memory_order_relaxed) < max) {}
  ~waiting_place() { waiting_.fetch_sub(1, std::memory_order_relaxed); }
  waiting_place(const waiting_place&) = delete;
  waiting_place& operator=(const waiting_place&) = delete;

  [[nodiscard]] bool taken() const noexcept { return taken_; }

private:
  std::atomic<std::size_t>& waiting_;
  bool taken_;
};

/// A place among `waiting`'s, shared (a message carries it), that keeps the count it is
/// given back to alive with it: the message may outlive whoever took the place, and the pod's
/// context that owns the count too (an actor's mailbox emptied at shutdown).
inline waiting_place_ptr share_place(std::shared_ptr<std::atomic<std::size_t>> waiting, std::size_t max) {
  struct owning {
    std::shared_ptr<std::atomic<std::size_t>> count;
    waiting_place place;
    owning(std::shared_ptr<std::atomic<std::size_t>> c, std::size_t m) : count(std::move(c)), place(*count, m) {}
  };
  auto held = std::make_shared<owning>(std::move(waiting), max);
  return waiting_place_ptr(held, &held->place);
}

} // namespace comb::actors
