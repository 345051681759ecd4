// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>

#include "protocol/community_key.hpp"

namespace comb::storage {

class pg_connection;

/// The signing key of the community `community_id` (its primary host read from the database).
/// Throws statement_failed on a database error or when there is no such community.
[[nodiscard]] protocol::key_pair read_community_key(pg_connection& connection,
                                                   const protocol::key_pair& relay_key,
                                                   std::int64_t community_id);

/// The signing key of each community a store writes for (protocol::derive_community_key),
/// derived once per community: a community's primary host never changes, so neither does its key.
class community_keys {
public:
  explicit community_keys(const protocol::key_pair& relay_key) : relay_key_(relay_key) {}

  /// The key of the community `community_id`, read_community_key the first time.
  [[nodiscard]] const protocol::key_pair& of(pg_connection& connection, std::int64_t community_id);

  /// The keys whose signatures in the community are the relay's own: the community's and the
  /// relay key it is derived from (which signed before communities had keys). Nobody bans them.
  [[nodiscard]] std::set<protocol::bytes32> own_keys(pg_connection& connection,
                                                     std::int64_t community_id);

  [[nodiscard]] const protocol::key_pair& relay_key() const noexcept { return relay_key_; }

private:
  protocol::key_pair relay_key_;
  std::unordered_map<std::int64_t, protocol::key_pair> keys_;
};

} // namespace comb::storage
