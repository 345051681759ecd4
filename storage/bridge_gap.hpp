// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace comb::storage {

class pg_connection;

/// A stored event as a gap brings it back: its JSON and the rooms it was stored as borrowing
/// (event_tags rows named `room`: a comment's thread's, an edit's that left its `h` out).
struct recent_event {
  std::string raw;
  std::vector<std::string> borrowed_rooms;
};

/// How much of a community's recent events one read brings back at most.
struct recent_bound {
  int rows = 1000;
  std::int64_t bytes = 64 * 1024 * 1024; ///< of their JSON, summed
};

struct recent_events {
  std::vector<recent_event> events;
  bool cut = false; ///< the bound left some out (or the row bound was met exactly)
  std::int64_t bytes = 0; ///< of the events' JSON, summed
};

/// Stored events a pod's subscribers may have missed while its bridge was cut: a community's
/// events stored at or after `since` (Unix seconds; `events.stored_at`, whatever their
/// created_at) and not expired at `now`, in the order stored, the newest of them within `bound`
/// (Postgres stops at the bound: the rows past it are never sent). Nothing on a database error.
[[nodiscard]] std::optional<recent_events>
load_recent_events(pg_connection& connection, std::int64_t community_id, std::int64_t since,
                   std::int64_t now, recent_bound bound);

} // namespace comb::storage
