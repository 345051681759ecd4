// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <deque>
#include <vector>

#include "actors/community/ban_list.hpp"
#include "actors/community/member_cache.hpp"
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
  ban_list_ptr bans; ///< may be unset (tests)
};

/// A membership command waiting for its turn, and who to tell the outcome.
struct queued_command {
  caf::actor reply_to;
  std::uint64_t ticket = 0;
  storage::membership_command command;
};

struct community_state {
  community_args args;
  std::deque<queued_command> queue;
  std::vector<queued_command> in_flight;
  /// created_at of the newest list applied to the cache, ours or another pod's.
  std::int64_t newest_list_at = 0;
  std::chrono::steady_clock::time_point batch_started;
  static inline const char* name = "community";
};

/// One per community per pod: the sequence point of its membership writes and the owner of its
/// member cache. Commands queued while a transaction runs go together into the next one (group
/// commit), each with its own outcome. After a commit it updates the cache, publishes the list
/// and the deltas to fan-out and bridge, and has the fan-out revoke anyone who lost access.
caf::behavior community_actor(caf::stateful_actor<community_state>* self, community_args args);

} // namespace comb::actors
