// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/room_rules.hpp"

namespace comb::storage {

class pg_connection;

// A room's rows (`rooms`, `room_members`) read into a protocol::room_state and written back from
// one. The writers run inside their caller's transaction and throw statement_failed on a
// database error (the caller rolls back).

/// The room as stored: `exists` false, with only its id, when there is no such room.
[[nodiscard]] protocol::room_state read_room(pg_connection& c, std::int64_t community_id,
                                             const std::string& room);

/// Every room of a community with its flags and members, in id order; nothing on an error.
[[nodiscard]] std::optional<std::vector<protocol::room_state>> load_rooms(pg_connection& connection,
                                                                          std::int64_t community_id);

/// The member rows as `after` has them (rows of `before` that differ are rewritten).
void write_members(pg_connection& c, std::int64_t community_id, const protocol::room_state& before,
                   const protocol::room_state& after);

/// The room's name, about, picture and flags as `room` has them.
void write_metadata(pg_connection& c, std::int64_t community_id, const protocol::room_state& room);

} // namespace comb::storage
