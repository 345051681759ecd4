// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <vector>

namespace comb::actors {

/// Which of a pod's storage readers are waiting for a slow client to read its history. A reader
/// waits only in a free slot (all but one reader may wait at once), and queries go to a reader
/// that is not waiting, so slow or hostile readers never hold every reader, nor stall the
/// other connections that would have been sent to the one that waits.
class reader_waits {
public:
  explicit reader_waits(std::size_t readers);

  /// The reader for a connection's query: its own (`owner` modulo the readers) unless that
  /// one is waiting, then the next one that is not.
  [[nodiscard]] std::size_t pick(std::uint64_t owner) const noexcept;
  /// Marks `reader` as waiting; false when no slot is free (the reply must not wait).
  [[nodiscard]] bool begin_wait(std::size_t reader) noexcept;
  void end_wait(std::size_t reader) noexcept;

private:
  std::size_t count_;
  std::unique_ptr<std::atomic<bool>[]> waiting_;
  std::atomic<std::size_t> free_slots_;
};

/// The reader a connection's query goes to; without `waits`, always the connection's own.
[[nodiscard]] const caf::actor& pick_reader(const std::vector<caf::actor>& readers,
                                            const reader_waits* waits, std::uint64_t owner);

} // namespace comb::actors
