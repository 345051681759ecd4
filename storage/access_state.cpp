// SPDX-License-Identifier: MIT
#include "storage/access_state.hpp"

#include "storage/membership_store.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"

namespace comb::storage {
namespace {

std::optional<community_access> read_access(pg_connection& connection, std::int64_t id) {
  auto row = connection.exec("SELECT access, archived_at IS NOT NULL, state_version, members_may_invite,"
                             " host FROM communities WHERE id = $1::bigint",
                             {std::to_string(id)});
  if (!row.ok())
    return std::nullopt;
  community_access out;
  out.community_id = id;
  if (row.rows() == 0)
    return out;
  out.exists = true;
  out.closed = row.text(0, 0) == "closed";
  out.archived = row.text(0, 1) == "t";
  out.version = row.integer(0, 2);
  out.members_may_invite = row.text(0, 3) == "t";
  out.host = std::string(row.text(0, 4));
  auto members = load_members(connection, id);
  if (!members)
    return std::nullopt;
  out.members = std::move(*members);
  auto bans = load_bans(connection, id);
  if (!bans)
    return std::nullopt;
  out.bans = std::move(*bans);
  auto rooms = load_rooms(connection, id);
  if (!rooms)
    return std::nullopt;
  out.rooms = std::move(*rooms);
  return out;
}

} // namespace

std::optional<community_access> load_access(pg_connection& connection, std::int64_t community_id) {
  // One snapshot for the row and the members, so the version names exactly what was read.
  if (!connection.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").ok())
    return std::nullopt;
  auto out = read_access(connection, community_id);
  if (!connection.exec("COMMIT").ok())
    return std::nullopt;
  return out;
}

std::optional<std::unordered_map<std::int64_t, std::int64_t>>
load_versions(pg_connection& connection, const std::vector<std::int64_t>& community_ids) {
  pg_array ids;
  for (auto id : community_ids)
    ids.add_integer(id);
  auto reply = connection.exec("SELECT id, state_version FROM communities"
                               " WHERE id = ANY($1::bigint[])",
                               {ids.str()});
  if (!reply.ok())
    return std::nullopt;
  std::unordered_map<std::int64_t, std::int64_t> out;
  for (int row = 0; row < reply.rows(); ++row)
    out[reply.integer(row, 0)] = reply.integer(row, 1);
  return out;
}

} // namespace comb::storage
