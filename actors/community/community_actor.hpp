// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <deque>
#include <vector>

#include "actors/community/ban_list.hpp"
#include "actors/community/community_hooks.hpp"
#include "actors/community/member_cache.hpp"
#include "actors/community/membership_queue.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include <chrono>

namespace comb::actors {

struct community_args {
  std::int64_t community_id = 0;
  member_cache_ptr cache;
  caf::actor membership_writer;
  caf::actor fanout;
  caf::actor bridge; ///< may be unset
  std::size_t batch_max = 512;
  std::shared_ptr<relay_metrics> metrics; ///< may be unset (tests)
  std::shared_ptr<const community_hooks> hooks; ///< may be unset (tests)
  ban_list_ptr bans; ///< may be unset (tests)
};

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

/// What a waiting room request holds: its event parsed and as sent.
[[nodiscard]] inline std::size_t queued_bytes(const storage::room_command& command) noexcept {
  return 2 * command.json.size() + sizeof command;
}

struct community_state {
  community_args args;
  membership_queue queue;
  std::vector<queued_command> in_flight;
  /// The database state version the cache holds; the cache never goes back to an older one.
  std::int64_t version = 0;
  /// The state version `closed` and `archived` were last taken from (they never go back).
  std::int64_t access_version = 0;
  bool closed = false;
  bool archived = false;
  /// The newest list has this second: commands wait for the next one, then go together.
  bool waiting_for_clock = false;
  std::chrono::steady_clock::time_point batch_started;
  /// Bounded: max_queued_commands, max_queued_room_bytes.
  std::deque<queued_room> room_queue;
  /// The requests of one room in the transaction under way (at most max_room_batch); with the
  /// queue, bounded by max_queued_commands and, in bytes, by max_queued_room_bytes.
  std::vector<queued_room> room_batch;
  std::size_t room_queue_bytes = 0;
  bool room_waiting_for_clock = false;
  static inline const char* name = "community";
};

/// One per community per pod: the sequence point of its membership and room writes and the owner
/// of its member cache (rooms included). Commands queued while a transaction runs go together into the next one (group
/// commit), each with its own outcome; when the newest list already has this second, they wait
/// for the next one together. After a commit it updates the cache, publishes the list and the
/// deltas to fan-out and bridge, and has the fan-out revoke anyone who lost access. The cache
/// follows the database only: its own commits and `refresh` (state the access watcher reloaded
/// after a notification), whichever carries the newer state version.
caf::behavior community_actor(caf::stateful_actor<community_state>* self, community_args args);

} // namespace comb::actors
