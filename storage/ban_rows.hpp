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

/// The bans of a batch's subjects (read_bans).
struct ban_reading {
  std::set<protocol::bytes32> banned;     ///< of the subjects, those banned from the community
  /// Of those, the ones only the owner may lift (plan_membership): made by `owner` or by the
  /// operator (no `banned_by`). An admin who could lift them would overrule whoever appointed them.
  std::set<protocol::bytes32> owner_held;
};

/// The bans of the subjects of commands that admit, ban or unban. A batch that bans also takes
/// the community's event lock exclusively, as a deletion does: event inserts hold it shared and
/// read the bans under it, so none of the banned author's events can commit after the ban
/// without seeing it.
[[nodiscard]] ban_reading read_bans(pg_connection& c, std::int64_t community_id,
                                    std::span<const membership_command> commands,
                                    const std::optional<protocol::bytes32>& owner);

/// Stores the bans a batch planned and deletes the ones it lifted.
void write_bans(pg_connection& c, std::int64_t community_id, const std::vector<ban_change>& bans);

} // namespace comb::storage
