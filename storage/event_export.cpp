// SPDX-License-Identifier: MIT
#include "storage/event_export.hpp"

#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// The parameters are NULL when a bound is absent; ORDER BY follows events_recent backwards.
constexpr const char* declare_cursor =
  "DECLARE comb_export NO SCROLL CURSOR FOR"
  " SELECT raw FROM events WHERE community_id = $1::bigint"
  " AND ($2::bigint IS NULL OR created_at >= $2::bigint)"
  " AND ($3::bigint IS NULL OR created_at <= $3::bigint)"
  " AND ($4::int[] IS NULL OR kind = ANY($4::int[]))"
  " AND (expires_at IS NULL OR expires_at > $5::bigint)"
  " ORDER BY created_at, id";

// NIP-62 requests to vanish, as signed, after the events (an import carries them out again and
// keeps the line): within the range's bounds, when its kinds include 62.
constexpr const char* vanish_requests =
  "SELECT request FROM vanished WHERE community_id = $1::bigint AND request IS NOT NULL"
  " AND ($2::bigint IS NULL OR until >= $2::bigint)"
  " AND ($3::bigint IS NULL OR until <= $3::bigint)"
  " AND ($4::int[] IS NULL OR 62 = ANY($4::int[]))"
  " ORDER BY until, pubkey";

std::optional<std::string> optional_number(const std::optional<std::int64_t>& value) {
  return value ? std::optional<std::string>(std::to_string(*value)) : std::nullopt;
}

std::optional<std::string> kinds_param(const std::vector<std::uint32_t>& kinds) {
  if (kinds.empty())
    return std::nullopt;
  pg_array array;
  for (auto kind : kinds)
    array.add_integer(kind);
  return array.str();
}

/// Fetches and hands over rows until the cursor is drained or the sink stops.
std::optional<std::string> drain_cursor(pg_connection& connection, const export_sink& sink,
                                        std::size_t fetch_rows) {
  const std::string fetch = "FETCH FORWARD " + std::to_string(fetch_rows) + " FROM comb_export";
  for (;;) {
    auto rows = connection.exec(fetch);
    if (!rows.ok())
      return rows.error();
    if (rows.rows() == 0)
      return std::nullopt;
    for (int row = 0; row < rows.rows(); ++row)
      if (!sink(rows.text(row, 0)))
        return std::nullopt;
  }
}

std::optional<std::string> export_in_transaction(pg_connection& connection,
                                                 std::int64_t community_id,
                                                 const export_range& range, std::int64_t now,
                                                 const export_sink& sink,
                                                 std::size_t fetch_rows) {
  const pg_params bounds{std::to_string(community_id), optional_number(range.since),
                         optional_number(range.until), kinds_param(range.kinds)};
  pg_params cursor_params = bounds;
  cursor_params.emplace_back(std::to_string(now));
  auto declared = connection.exec(declare_cursor, cursor_params);
  if (!declared.ok())
    return declared.error();
  bool going_on = true;
  auto counting_sink = [&](std::string_view json) { return going_on = sink(json); };
  if (auto failed = drain_cursor(connection, counting_sink, fetch_rows); failed || !going_on)
    return failed;
  auto requests = connection.exec(vanish_requests, bounds);
  if (!requests.ok())
    return requests.error();
  for (int row = 0; row < requests.rows(); ++row)
    if (!sink(requests.text(row, 0)))
      break;
  return std::nullopt;
}

} // namespace

std::optional<std::string> export_events(pg_connection& connection, std::int64_t community_id,
                                         const export_range& range, std::int64_t now,
                                         const export_sink& sink, std::size_t fetch_rows) {
  auto begin = connection.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!begin.ok())
    return begin.error();
  auto failed = export_in_transaction(connection, community_id, range, now, sink,
                                      fetch_rows == 0 ? 1 : fetch_rows);
  // Read only: ending it either way changes nothing; its own failure is not the export's.
  (void)connection.exec(failed ? "ROLLBACK" : "COMMIT");
  return failed;
}

} // namespace comb::storage
