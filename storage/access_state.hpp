// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/room_rules.hpp"
#include "storage/management_store.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

class pg_connection;

/// What access checks of one community read, as the database has it at `version`.
struct community_access {
  std::int64_t community_id = 0;
  bool exists = false; ///< false: deleted
  bool closed = false;
  bool archived = false;
  bool members_may_invite = false; ///< plain members may mint invites (owner and admins always)
  std::string host; ///< the primary host, whose derived key signs the community's lists
  std::int64_t version = 0;
  std::vector<member> members;
  community_bans bans;
  std::vector<protocol::room_state> rooms; ///< NIP-29 rooms: flags and members
};

/// The community's access state in one consistent read (a REPEATABLE READ snapshot);
/// nothing on a database error.
[[nodiscard]] std::optional<community_access> load_access(pg_connection& connection,
                                                          std::int64_t community_id);

/// The state versions of `community_ids` (a deleted community is absent); nothing on a
/// database error. One cheap query, for the periodic check.
[[nodiscard]] std::optional<std::unordered_map<std::int64_t, std::int64_t>>
load_versions(pg_connection& connection, const std::vector<std::int64_t>& community_ids);

} // namespace comb::storage
