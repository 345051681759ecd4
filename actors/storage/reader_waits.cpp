// SPDX-License-Identifier: MIT
#include "actors/storage/reader_waits.hpp"

namespace comb::actors {

reader_waits::reader_waits(std::size_t readers)
  : count_(readers),
    waiting_(std::make_unique<std::atomic<bool>[]>(readers > 0 ? readers : 1)),
    free_slots_(readers > 0 ? readers - 1 : 0) {}

std::size_t reader_waits::pick(std::uint64_t owner) const noexcept {
  if (count_ == 0)
    return 0;
  std::size_t own = owner % count_;
  for (std::size_t step = 0; step < count_; ++step) {
    std::size_t candidate = (own + step) % count_;
    if (!waiting_[candidate].load(std::memory_order_acquire))
      return candidate;
  }
  return own;
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

const caf::actor& pick_reader(const std::vector<caf::actor>& readers, const reader_waits* waits,
                              std::uint64_t owner) {
  if (waits)
    return readers[waits->pick(owner) % readers.size()];
  return readers[owner % readers.size()];
}

} // namespace comb::actors
