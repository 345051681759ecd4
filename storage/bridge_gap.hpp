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

/// Stored events a pod's subscribers may have missed while its bridge was cut: a community's
/// events stored at or after `since` (Unix seconds; `events.stored_at`, whatever their
/// created_at) and not expired at `now`, in the order stored, the newest `limit` of them.
/// Nothing on a database error.
[[nodiscard]] std::optional<std::vector<recent_event>>
load_recent_events(pg_connection& connection, std::int64_t community_id, std::int64_t since,
                   std::int64_t now, int limit);

} // namespace comb::storage
