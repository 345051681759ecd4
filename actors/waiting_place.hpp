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
/// whatever became of its sender.
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

} // namespace comb::actors
