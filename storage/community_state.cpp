// SPDX-License-Identifier: MIT
#include "storage/community_state.hpp"

#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {

std::optional<std::vector<std::int64_t>>
inactive_communities(pg_connection& connection, const std::vector<std::int64_t>& community_ids) {
  std::vector<std::int64_t> inactive;
  if (community_ids.empty())
    return inactive;
  pg_array ids;
  for (auto id : community_ids)
    ids.add_integer(id);
  auto reply = connection.exec(
    "SELECT wanted.id FROM unnest($1::bigint[]) AS wanted(id)"
    " LEFT JOIN communities c ON c.id = wanted.id"
    " WHERE c.id IS NULL OR c.archived_at IS NOT NULL",
    {ids.str()});
  if (!reply.ok())
    return std::nullopt;
  for (int row = 0; row < reply.rows(); ++row)
    inactive.push_back(reply.integer(row, 0));
  return inactive;
}

} // namespace comb::storage
