// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace comb::actors {

/// Which of a pod's storage readers are waiting for a slow client to read its history, and how
/// many queries each has queued. A reader waits only in a free slot (all but one reader may wait
/// at once) and keeps that slot until the reply it waited for ends, since a reply that waited once
/// will likely wait again; queries go to the least-queued reader that is not waiting, so slow or
/// hostile readers never hold every reader, and a short REQ does not queue behind a long reply
/// when another reader is idle.
///
/// Past `max_queued_per_reader`, a connection keeps its next query (a client that opens queries
/// and leaves, again and again, must not grow the readers' queues) and waits its turn: each
/// query a reader ends wakes the connection that has waited longest, and the room it frees is
/// kept for that connection until it has resumed, so a newcomer queues behind it. A burst of
/// REQs (every client of a restarted pod subscribing at once) is answered late, never refused.
class reader_waits {
public:
  /// Queries queued per reader, on average over the pod, past which new ones wait in their
  /// connection.
  static constexpr std::uint32_t max_queued_per_reader = 64;

  explicit reader_waits(std::size_t readers);

  /// Queries sent to the readers and not yet answered, over the pod.
  [[nodiscard]] std::uint64_t queued_total() const noexcept;

  /// True when no more queries should be sent: the readers hold their bound, counting the room
  /// kept for connections woken and not yet resumed.
  [[nodiscard]] bool full() const noexcept;

  /// The reader for a connection's query: the least-queued one that is not waiting, the
  /// connection's own (`owner` modulo the readers) first among equals.
  [[nodiscard]] std::size_t pick(std::uint64_t owner) const noexcept;
  /// Marks `reader` as waiting; false when no slot is free (the reply must not wait).
  [[nodiscard]] bool begin_wait(std::size_t reader) noexcept;
  void end_wait(std::size_t reader) noexcept;
  /// A query was sent to `reader` / `reader` finished one (which wakes the longest waiter).
  void queued(std::size_t reader) noexcept;
  void answered(std::size_t reader);

  /// `connection` holds a query back while `full()`: it gets (resume_atom) when a reader ends
  /// one, or at once if the readers emptied meanwhile. At most once per connection at a time
  /// (the connection remembers it asked).
  void wait_for_room(caf::actor connection);
  /// A woken connection has resumed: the room kept for it is its to take now.
  void resumed() noexcept;
  /// Wakes the longest waiter, keeping a query's room for it (a reader ended a query, or a woken
  /// connection had nothing left to start).
  void wake_next();
  /// A connection that asked to wait has ended: out of the queue, or, when its wake-up was
  /// already sent, that wake-up goes to the next waiter.
  void leave(const caf::actor_addr& connection);
  [[nodiscard]] std::size_t waiters() const;

private:
  std::size_t count_;
  std::unique_ptr<std::atomic<bool>[]> waiting_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> queued_;
  std::atomic<std::size_t> free_slots_;
  std::atomic<std::uint32_t> woken_{0}; ///< wake-ups sent and not yet resumed
  mutable std::mutex waiters_mutex_;
  std::deque<caf::actor> waiters_;
};

/// A reader's wait slot for one reply: taken at the reply's first wait, given back when the
/// reply ends (the holder goes out of scope).
class reply_wait_slot {
public:
  reply_wait_slot(reader_waits* waits, std::size_t reader) noexcept : waits_(waits), reader_(reader) {}
  ~reply_wait_slot();
  reply_wait_slot(const reply_wait_slot&) = delete;
  reply_wait_slot& operator=(const reply_wait_slot&) = delete;

  /// True when the reply may wait: the slot is held (already, or taken now), or there are no
  /// slots to respect (`waits` null).
  [[nodiscard]] bool hold() noexcept;

private:
  reader_waits* waits_;
  std::size_t reader_;
  bool held_ = false;
};

/// The reader a connection's query goes to, counted as queued there; without `waits`, always
/// the connection's own.
[[nodiscard]] const caf::actor& pick_reader(const std::vector<caf::actor>& readers,
                                            reader_waits* waits, std::uint64_t owner);

} // namespace comb::actors
