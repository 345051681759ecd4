// SPDX-License-Identifier: MIT
#include "storage/bridge_gap.hpp"

#include "storage/pg_connection.hpp"

namespace comb::storage {

std::optional<std::vector<std::string>>
load_recent_events(pg_connection& connection, std::int64_t community_id, std::int64_t since,
                   std::int64_t now, int limit) {
  // events_stored (BRIN on stored_at) finds the recent rows at the table's end. The newest
  // rows are taken: `since` reaches back before the loss, and in a busy community the oldest
  // `limit` rows would all be from then (delivered already, dropped as repeats) and none from
  // the gap itself. They are handed on in the order stored.
  auto reply = connection.exec("SELECT raw FROM (SELECT raw, stored_at, created_at FROM events"
                               " WHERE community_id = $1::bigint AND stored_at >= $2::bigint"
                               " AND (expires_at IS NULL OR expires_at > $3::bigint)"
                               " ORDER BY stored_at DESC, created_at DESC LIMIT $4::int) AS newest"
                               " ORDER BY stored_at, created_at",
                               {std::to_string(community_id), std::to_string(since),
                                std::to_string(now), std::to_string(limit)});
  if (!reply.ok())
    return std::nullopt;
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(reply.rows()));
  for (int row = 0; row < reply.rows(); ++row)
    out.emplace_back(reply.text(row, 0));
  return out;
}

} // namespace comb::storage
