// SPDX-License-Identifier: MIT
#include "storage/access_change.hpp"

#include <charconv>

#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// One statement bumps the version, records the written ids under it, prunes the community's
// old records and raises the notification "<community> <version>[ +]". The ids travel in the
// table, not the payload: a payload must stay under 8000 bytes, a change may write thousands.
constexpr const char* note_sql =
  "WITH bumped AS (UPDATE communities SET state_version = state_version + 1"
  " WHERE id = $1::bigint RETURNING state_version),"
  " recorded AS (INSERT INTO noted_events (community_id, version, position, event_id)"
  " SELECT $1::bigint, bumped.state_version, w.position, w.id FROM bumped,"
  " unnest($2::bytea[]) WITH ORDINALITY AS w (id, position)),"
  " pruned AS (DELETE FROM noted_events WHERE community_id = $1::bigint"
  " AND noted_at < now() - $3::bigint * interval '1 second')"
  " SELECT state_version, pg_notify('comb_access', $1::bigint::text || ' ' || state_version"
  " || CASE WHEN cardinality($2::bytea[]) > 0 THEN ' +' ELSE '' END)"
  " FROM bumped";

// The row comparison walks the primary key (community_id, version, position) from `after`.
constexpr const char* load_sql =
  "SELECT n.version, n.position, e.raw FROM noted_events n"
  " JOIN events e ON e.community_id = n.community_id AND e.id = n.event_id"
  " WHERE n.community_id = $1::bigint AND (n.version, n.position) > ($2::bigint, $3::bigint)"
  " AND n.version <= $4::bigint ORDER BY n.version, n.position LIMIT $5::int";

std::optional<std::int64_t> number(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

} // namespace

std::optional<std::int64_t> note_access_change(pg_connection& tx, std::int64_t community_id,
                                               const std::vector<protocol::bytes32>& written,
                                               std::string& error) {
  pg_array ids;
  for (const auto& id : written)
    ids.add_bytea(id);
  auto reply = tx.exec(note_sql, {std::to_string(community_id), ids.str(),
                                  std::to_string(noted_events_kept.count())});
  if (!reply.ok()) {
    error = "note access change: " + reply.error();
    return std::nullopt;
  }
  if (reply.rows() == 0)
    return std::nullopt;
  return reply.integer(0, 0);
}

std::optional<access_notice> parse_access_notice(std::string_view payload) {
  access_notice notice;
  std::size_t field = 0;
  while (!payload.empty()) {
    auto space = payload.find(' ');
    auto word = payload.substr(0, space);
    payload = space == std::string_view::npos ? std::string_view{} : payload.substr(space + 1);
    if (word.empty())
      return std::nullopt;
    if (field == 0 || field == 1) {
      auto value = number(word);
      if (!value)
        return std::nullopt;
      (field == 0 ? notice.community_id : notice.version) = *value;
    } else if (field == 2 && word == "+") {
      notice.wrote_events = true;
    } else {
      return std::nullopt;
    }
    ++field;
  }
  if (field < 2)
    return std::nullopt;
  return notice;
}

std::optional<std::vector<noted_event>>
load_noted_events(pg_connection& connection, std::int64_t community_id, noted_position after,
                  std::int64_t through, int limit) {
  auto reply = connection.exec(load_sql, {std::to_string(community_id), std::to_string(after.version),
                                          std::to_string(after.position), std::to_string(through),
                                          std::to_string(limit)});
  if (!reply.ok())
    return std::nullopt;
  std::vector<noted_event> out;
  out.reserve(static_cast<std::size_t>(reply.rows()));
  for (int row = 0; row < reply.rows(); ++row)
    out.push_back({{reply.integer(row, 0), reply.integer(row, 1)}, std::string(reply.text(row, 2))});
  return out;
}

} // namespace comb::storage
