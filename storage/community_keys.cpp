// SPDX-License-Identifier: MIT
#include "storage/community_keys.hpp"

#include <string>

#include "storage/pg_connection.hpp"

namespace comb::storage {

protocol::key_pair read_community_key(pg_connection& connection, const protocol::key_pair& relay_key,
                                      std::int64_t community_id) {
  auto reply = must(connection.exec("SELECT host FROM communities WHERE id = $1::bigint",
                                    {std::to_string(community_id)}),
                    "read the community's host");
  if (reply.rows() == 0)
    throw statement_failed("no community " + std::to_string(community_id));
  return protocol::derive_community_key(relay_key, reply.text(0, 0));
}

const protocol::key_pair& community_keys::of(pg_connection& connection, std::int64_t community_id) {
  if (auto known = keys_.find(community_id); known != keys_.end())
    return known->second;
  return keys_.emplace(community_id, read_community_key(connection, relay_key_, community_id))
    .first->second;
}

std::set<protocol::bytes32> community_keys::own_keys(pg_connection& connection,
                                                    std::int64_t community_id) {
  return {of(connection, community_id).public_key(), relay_key_.public_key()};
}

} // namespace comb::storage
