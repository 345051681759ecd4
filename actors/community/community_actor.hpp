// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <deque>
#include <vector>

#include "actors/community/ban_list.hpp"
#include "actors/community/community_hooks.hpp"
#include "actors/community/member_cache.hpp"
#include "actors/community/membership_queue.hpp"
#include "actors/community/room_queue.hpp"
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
  /// Each wait for the clock has its number: a wake from a wait ended early is stale.
  std::uint64_t clock_wait = 0;
  /// A command that may take access was queued since the last batch was taken: it ends a wait
  /// for the clock (a list far ahead must not hold a ban or a removal back).
  bool access_change_queued = false;
  std::chrono::steady_clock::time_point batch_started;
  std::chrono::steady_clock::time_point clock_warned; ///< last warning of a list ahead of the clock
  /// Room requests waiting and the one room batch under way.
  actors::room_queue rooms;
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
