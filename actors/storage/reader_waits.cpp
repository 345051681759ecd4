// SPDX-License-Identifier: MIT
#include "actors/storage/reader_waits.hpp"

#include <algorithm>

#include "actors/messages.hpp"

namespace comb::actors {
namespace {

/// One less, never below zero, whatever a test or a lost message did.
void decrement_to_zero(std::atomic<std::uint32_t>& count) noexcept {
  std::uint32_t now = count.load(std::memory_order_relaxed);
  while (now > 0 && !count.compare_exchange_weak(now, now - 1, std::memory_order_acq_rel)) {
  }
}

} // namespace

reader_waits::reader_waits(std::size_t readers)
  : count_(readers),
    waiting_(std::make_unique<std::atomic<bool>[]>(readers > 0 ? readers : 1)),
    queued_(std::make_unique<std::atomic<std::uint32_t>[]>(readers > 0 ? readers : 1)),
    free_slots_(readers > 0 ? readers - 1 : 0) {}

std::size_t reader_waits::pick(std::uint64_t owner) const noexcept {
  if (count_ == 0)
    return 0;
  std::size_t own = owner % count_;
  std::size_t best = own;
  bool found = false;
  std::uint32_t best_queued = 0;
  for (std::size_t step = 0; step < count_; ++step) {
    std::size_t candidate = (own + step) % count_;
    if (waiting_[candidate].load(std::memory_order_acquire))
      continue;
    std::uint32_t queued = queued_[candidate].load(std::memory_order_relaxed);
    if (!found || queued < best_queued) {
      best = candidate;
      best_queued = queued;
      found = true;
    }
  }
  return best;
}

std::uint64_t reader_waits::queued_total() const noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < count_; ++i)
    total += queued_[i].load(std::memory_order_relaxed);
  return total;
}

bool reader_waits::full() const noexcept {
  return queued_total() + woken_.load(std::memory_order_acquire)
         >= std::uint64_t{max_queued_per_reader} * (count_ > 0 ? count_ : 1);
}

bool reader_waits::begin_wait(std::size_t reader) noexcept {
  if (reader >= count_)
    return false;
  std::size_t free = free_slots_.load(std::memory_order_acquire);
  do {
    if (free == 0)
      return false;
  } while (!free_slots_.compare_exchange_weak(free, free - 1, std::memory_order_acq_rel));
  waiting_[reader].store(true, std::memory_order_release);
  return true;
}

void reader_waits::end_wait(std::size_t reader) noexcept {
  if (reader >= count_)
    return;
  waiting_[reader].store(false, std::memory_order_release);
  free_slots_.fetch_add(1, std::memory_order_acq_rel);
}

void reader_waits::queued(std::size_t reader) noexcept {
  if (reader < count_)
    queued_[reader].fetch_add(1, std::memory_order_relaxed);
}

void reader_waits::answered(std::size_t reader) {
  if (reader >= count_)
    return;
  decrement_to_zero(queued_[reader]);
  wake_next();
}

void reader_waits::wait_for_room(caf::actor connection) {
  {
    std::lock_guard lock(waiters_mutex_);
    waiters_.push_back(std::move(connection));
  }
  // The readers may have ended every query between the caller's look at full() and now, with
  // nobody queued to wake: then nothing else would.
  if (!full())
    wake_next();
}

void reader_waits::resumed() noexcept {
  decrement_to_zero(woken_);
}

void reader_waits::wake_next() {
  caf::actor next;
  {
    std::lock_guard lock(waiters_mutex_);
    if (waiters_.empty())
      return;
    next = std::move(waiters_.front());
    waiters_.pop_front();
    woken_.fetch_add(1, std::memory_order_acq_rel);
  }
  caf::anon_send(next, resume_atom_v);
}

void reader_waits::leave(const caf::actor_addr& connection) {
  {
    std::lock_guard lock(waiters_mutex_);
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [&](const caf::actor& waiter) { return waiter.address() == connection; });
    if (it != waiters_.end()) {
      waiters_.erase(it);
      return;
    }
  }
  resumed(); // its wake-up was on its way: the room kept for it goes to the next waiter
  wake_next();
}

std::size_t reader_waits::waiters() const {
  std::lock_guard lock(waiters_mutex_);
  return waiters_.size();
}

reply_wait_slot::~reply_wait_slot() {
  if (held_)
    waits_->end_wait(reader_);
}

bool reply_wait_slot::hold() noexcept {
  if (!waits_ || held_)
    return true;
  held_ = waits_->begin_wait(reader_);
  return held_;
}

const caf::actor& pick_reader(const std::vector<caf::actor>& readers, reader_waits* waits,
                              std::uint64_t owner) {
  if (!waits)
    return readers[owner % readers.size()];
  std::size_t reader = waits->pick(owner) % readers.size();
  waits->queued(reader);
  return readers[reader];
}

} // namespace comb::actors
