// SPDX-License-Identifier: MIT
#pragma once

#include <cstdio>
#include <optional>
#include <vector>

#include "admin/import_rules.hpp"
#include "admin/session.hpp"
#include "protocol/room_rules.hpp"

namespace comb::admin {

/// The rooms the relay with key `relay` held, as its newest state events among `events` say:
/// per room id, its 39000 (name, about, picture, flags; a room without one is left out), 39002
/// (members, in order), 39001 (their `admin` and `moderator` roles) and 39005 (pins, at most
/// max_room_pins `e` and `a` tags). Events by any other key are not room state. In id order.
[[nodiscard]] std::vector<protocol::room_state>
rooms_of_state(const std::vector<protocol::event>& events, const protocol::bytes32& relay);

/// --rooms-from-state: reads the whole file for the room state (rooms_of_state) of
/// `list_author`, the relay that wrote the file (without it, fails naming the authors of the
/// file's 13534 lists), each line checked like any other; creates the
/// rooms the community does not have, with their members and roles (storage::restore_rooms).
/// Rewinds the file. Returns how many rooms were created, or nothing with the failure reported.
[[nodiscard]] std::optional<std::size_t>
rooms_from_state(std::FILE* file, const import_policy& policy,
                 const std::optional<protocol::bytes32>& list_author, const admin_options& options,
                 admin_session& session, const storage::community_row& community, reporter& out);

} // namespace comb::admin
