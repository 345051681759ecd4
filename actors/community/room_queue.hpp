// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "actors/community/membership_queue.hpp"
#include "storage/room_store.hpp"

namespace comb::actors {

/// A room request waiting for its turn (one room transaction of a community at a time).
struct queued_room {
  caf::actor reply_to;
  std::uint64_t ticket = 0;
  storage::room_command command;
};

/// Room requests of one room that go in one transaction, their state signed once: a burst of
/// joins (or an admin adding many people at once, one 9000 each) is answered together instead
/// of one a second, past welshman's 10 s publish timeout.
inline constexpr std::size_t max_room_batch = 64;

/// Room requests carry their event (up to a client frame each): past these bytes waiting, more
/// are answered `busy` too, whatever their count.
inline constexpr std::size_t max_queued_room_bytes = 32 * 1024 * 1024;

/// The largest room request (its event's JSON) taken: a 9002's about text or a 9010's pins fit
/// many times over, and the queue's bytes hold hundreds of the largest.
inline constexpr std::size_t max_room_request_bytes = 64 * 1024;

/// One person's own joins and leaves waiting in a community. Each of them needs a second of its
/// own (a join and a leave of one person never share one), and everything of its room queued
/// behind waits for it: a key alternating joins and leaves must not hold a room for minutes.
inline constexpr std::size_t max_queued_per_member = 4;

/// What a waiting room request holds: its event parsed and as sent.
[[nodiscard]] inline std::size_t queued_bytes(const storage::room_command& command) noexcept {
  return command.json.size() + protocol::parsed_bytes(command.ev) + sizeof command;
}

/// A join or a leave (9021, 9022) its author sends for themselves: anyone may, so they share
/// the smaller lane of the queue, as the community's own joins and leaves do.
[[nodiscard]] bool is_own_room_request(const protocol::room_request& request) noexcept;

/// A community's room requests, in arrival order, and the batch under way. Bounded in count
/// (max_queued_commands, with max_queued_self_requests for joins and leaves and
/// max_queued_per_member for one person's), and in bytes (max_queued_room_bytes). A room whose
/// state already has this second waits for the next one alone: the other rooms' requests go on.
class room_queue {
public:
  /// Queues the request at the back, or leaves it (false) past a bound.
  [[nodiscard]] bool push(queued_room waiting);
  /// The next batch, taken off the queue and under way until finish_batch or retry_batch: the
  /// first request whose room is not waiting for its clock, and the requests of that room after
  /// it, up to max_room_batch, ending before one about someone the batch holds already (a join
  /// and a leave of one person would get a relay 9000 and 9001 of one second, and apps tell
  /// which is newer by created_at). Empty while a batch is under way or nothing may go.
  [[nodiscard]] std::vector<storage::room_command> start_batch();
  /// The batch under way is done: its requests leave the bounds, to be answered.
  [[nodiscard]] std::vector<queued_room> finish_batch();
  /// The batch under way must wait until `retry_at`: back at the front in its order, its room
  /// held until release(room, retry_at). Returns the room.
  std::string retry_batch(std::int64_t retry_at);
  /// The second `retry_at` has begun for `room`.
  void release(const std::string& room, std::int64_t retry_at);

  [[nodiscard]] std::size_t size() const noexcept { return waiting_.size() + under_way_.size(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

private:
  /// A request's share of the bounds, from push until finish_batch.
  void take_place(const queued_room& request);
  void free_place(const queued_room& request);

  std::deque<queued_room> waiting_;
  std::vector<queued_room> under_way_;
  std::map<std::string, std::int64_t> rooms_on_clock_; ///< room → the second it waits for
  std::map<protocol::bytes32, std::size_t> own_requests_;
  std::size_t self_requests_ = 0;
  std::size_t bytes_ = 0;
};

} // namespace comb::actors
