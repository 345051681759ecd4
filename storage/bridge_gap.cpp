// SPDX-License-Identifier: MIT
#include "storage/bridge_gap.hpp"

#include <ranges>

#include "storage/pg_connection.hpp"

namespace comb::storage {

std::optional<recent_events>
load_recent_events(pg_connection& connection, std::int64_t community_id, std::int64_t since,
                   std::int64_t now, recent_bound bound) {
  // events_stored (BRIN on stored_at) finds the recent rows at the table's end. The newest
  // rows are taken: `since` reaches back before the loss, and in a busy community the oldest
  // `limit` rows would all be from then (delivered already, dropped as repeats) and none from
  // the gap itself. They are handed on in the order stored. A room id has no comma
  // (protocol::valid_room_id): one that had would name no room, and hide the event. The
  // running sum runs over the newest rows the LIMIT chose (so Postgres still sorts only those),
  // newest first: the first row past the bytes bound comes without its JSON (NULL), telling the
  // bound cut there, and the rows after it not at all.
  auto reply = connection.exec("SELECT CASE WHEN bytes_so_far <= $5::bigint THEN raw END,"
                               " (SELECT string_agg(t.value, ',' ORDER BY t.value) FROM event_tags t"
                               " WHERE t.community_id = counted.community_id AND t.event_id = counted.id"
                               " AND t.name = 'room') FROM (SELECT community_id, id, raw, stored_at, created_at,"
                               " sum(octet_length(raw)) OVER (ORDER BY stored_at DESC, created_at DESC, id"
                               " ROWS UNBOUNDED PRECEDING) AS bytes_so_far FROM (SELECT community_id, id, raw,"
                               " stored_at, created_at FROM events"
                               " WHERE community_id = $1::bigint AND stored_at >= $2::bigint"
                               " AND (expires_at IS NULL OR expires_at > $3::bigint)"
                               " ORDER BY stored_at DESC, created_at DESC, id LIMIT $4::int) AS newest) AS counted"
                               " WHERE bytes_so_far - octet_length(raw) <= $5::bigint"
                               " ORDER BY stored_at, created_at, id",
                               {std::to_string(community_id), std::to_string(since),
                                std::to_string(now), std::to_string(bound.rows),
                                std::to_string(bound.bytes)});
  if (!reply.ok())
    return std::nullopt;
  recent_events out;
  out.cut = reply.rows() >= bound.rows;
  out.events.reserve(static_cast<std::size_t>(reply.rows()));
  for (int row = 0; row < reply.rows(); ++row) {
    if (reply.is_null(row, 0)) {
      out.cut = true;
      continue;
    }
    recent_event stored{std::string(reply.text(row, 0)), {}};
    if (!reply.is_null(row, 1))
      for (auto room : std::views::split(reply.text(row, 1), ','))
        stored.borrowed_rooms.emplace_back(room.begin(), room.end());
    out.bytes += static_cast<std::int64_t>(stored.raw.size());
    out.events.push_back(std::move(stored));
  }
  return out;
}

} // namespace comb::storage
