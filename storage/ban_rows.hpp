// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <vector>

#include "storage/membership.hpp"
#include "storage/membership_rules.hpp"

namespace comb::storage {

class pg_connection;

// NIP-86 pubkey bans as membership writes see them. Both functions run inside a membership
// transaction and throw std::runtime_error when a statement fails, so that its owner
// (membership_store) rolls the whole change back.

/// Of the subjects of commands that admit, ban or unban, those banned from the community. A
/// batch that bans also takes the community's event lock exclusively, as a deletion does: event
/// inserts hold it shared and read the bans under it, so none of the banned author's events can
/// commit after the ban without seeing it.
[[nodiscard]] std::set<protocol::bytes32> read_bans(pg_connection& c, std::int64_t community_id,
                                                    std::span<const membership_command> commands);

/// Stores the bans a batch planned and deletes the ones it lifted.
void write_bans(pg_connection& c, std::int64_t community_id, const std::vector<ban_change>& bans);

} // namespace comb::storage
