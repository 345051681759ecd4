// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "protocol/room_rules.hpp"
#include "protocol/signature.hpp"

namespace comb::protocol {

/// The relay-signed room state (NIP-29 "Group metadata events"), each with `d` = room id.
[[nodiscard]] event sign_room_metadata(const key_pair& relay, const room_state& room,
                                       std::int64_t created_at);
/// 39001: members with at least one role, with their roles.
[[nodiscard]] event sign_room_admins(const key_pair& relay, const room_state& room,
                                     std::int64_t created_at);
/// 39002: every member.
[[nodiscard]] event sign_room_members(const key_pair& relay, const room_state& room,
                                      std::int64_t created_at);
/// 39003: the roles the relay gives power to.
[[nodiscard]] event sign_room_roles(const key_pair& relay, const room_state& room,
                                    std::int64_t created_at);
/// 39005: the pinned events, in the order the last 9010 gave them.
[[nodiscard]] event sign_room_pins(const key_pair& relay, const room_state& room,
                                   std::int64_t created_at);
/// The 9000 the relay issues for a 9021 join, or the 9001 for a 9022 leave: `kind` names which.
[[nodiscard]] event sign_room_member_change(const key_pair& relay, std::uint32_t kind,
                                            const std::string& room, const bytes32& subject,
                                            std::int64_t created_at);
/// A 9008 of the relay's own for a room deleted by a 9008 no newer than the room's newest state:
/// Flotilla hides a room only when a deletion is newer than its 39000 (an admin's device clock a
/// little behind the relay's would leave the room listed everywhere).
[[nodiscard]] event sign_room_deletion(const key_pair& relay, const std::string& room,
                                       std::int64_t created_at);

} // namespace comb::protocol
