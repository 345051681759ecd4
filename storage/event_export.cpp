// SPDX-License-Identifier: MIT
#include "storage/event_export.hpp"

#include <algorithm>

#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// The parameters are NULL when a bound is absent; ORDER BY follows events_recent backwards.
// The cursor yields each event's key and size (octet_length reads a stored value's size
// without decompressing it); the events themselves are read in pages of bounded bytes.
constexpr const char* declare_cursor =
  "DECLARE comb_export NO SCROLL CURSOR FOR"
  " SELECT encode(id, 'hex'), octet_length(raw) FROM events WHERE community_id = $1::bigint"
  " AND ($2::bigint IS NULL OR created_at >= $2::bigint)"
  " AND ($3::bigint IS NULL OR created_at <= $3::bigint)"
  " AND ($4::int[] IS NULL OR kind = ANY($4::int[]))"
  " AND (expires_at IS NULL OR expires_at > $5::bigint)"
  " ORDER BY created_at, id";

// One page of the cursor's events, in its order (the same snapshot: every row is still there).
constexpr const char* page_of_events =
  "SELECT raw FROM events WHERE community_id = $1::bigint AND id = ANY($2::bytea[])"
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

/// The events of one page, handed over in order; false in `going_on` once the sink stops.
std::optional<std::string> send_page(pg_connection& connection, const std::string& community,
                                     const pg_array& ids, const export_sink& sink, bool& going_on) {
  auto rows = connection.exec(page_of_events, {community, ids.str()});
  if (!rows.ok())
    return rows.error();
  for (int row = 0; row < rows.rows() && going_on; ++row)
    going_on = sink(rows.text(row, 0));
  return std::nullopt;
}

/// Fetches keys from the cursor and hands over their events, each page at most `page_bytes`
/// (or one event), until the cursor is drained or the sink stops: a page of 500 events of a
/// megabyte each would otherwise be held at once.
std::optional<std::string> drain_cursor(pg_connection& connection, const std::string& community,
                                        const export_sink& sink, const export_paging& paging,
                                        bool& going_on) {
  const std::string fetch = "FETCH FORWARD " + std::to_string(paging.keys_per_fetch) + " FROM comb_export";
  for (;;) {
    auto keys = connection.exec(fetch);
    if (!keys.ok())
      return keys.error();
    if (keys.rows() == 0)
      return std::nullopt;
    pg_array page;
    std::int64_t page_size = 0;
    for (int row = 0; row < keys.rows() && going_on; ++row) {
      auto size = keys.integer(row, 1);
      if (!page.empty() && page_size + size > static_cast<std::int64_t>(paging.page_bytes)) {
        if (auto failed = send_page(connection, community, page, sink, going_on))
          return failed;
        page = {};
        page_size = 0;
      }
      page.add_text("\\x" + std::string(keys.text(row, 0)));
      page_size += size;
    }
    if (going_on && !page.empty())
      if (auto failed = send_page(connection, community, page, sink, going_on))
        return failed;
    if (!going_on)
      return std::nullopt;
  }
}

std::optional<std::string> export_in_transaction(pg_connection& connection,
                                                 std::int64_t community_id,
                                                 const export_range& range, std::int64_t now,
                                                 const export_sink& sink,
                                                 const export_paging& paging) {
  const pg_params bounds{std::to_string(community_id), optional_number(range.since),
                         optional_number(range.until), kinds_param(range.kinds)};
  pg_params cursor_params = bounds;
  cursor_params.emplace_back(std::to_string(now));
  auto declared = connection.exec(declare_cursor, cursor_params);
  if (!declared.ok())
    return declared.error();
  bool going_on = true;
  if (auto failed = drain_cursor(connection, bounds[0].value(), sink, paging, going_on);
      failed || !going_on)
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
                                         const export_sink& sink, export_paging paging) {
  auto begin = connection.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!begin.ok())
    return begin.error();
  paging.keys_per_fetch = std::max<std::size_t>(paging.keys_per_fetch, 1);
  auto failed = export_in_transaction(connection, community_id, range, now, sink, paging);
  // Read only: ending it either way changes nothing; its own failure is not the export's.
  (void)connection.exec(failed ? "ROLLBACK" : "COMMIT");
  return failed;
}

} // namespace comb::storage
