// SPDX-License-Identifier: MIT
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "storage/membership_store.hpp"
#include "support/pg_test_database.hpp"

namespace comb::test {

/// A migrated database with one community, a relay key and a membership store.
struct membership_fixture : store_fixture {
  membership_fixture();

  /// Applies one command now (paced: a second that has a list is skipped over).
  storage::membership_write apply(storage::membership_command command);

  /// Every live 13534 of `community_id` (there must be at most one).
  std::vector<protocol::event> live_lists(std::int64_t community_id);

  /// The stored members as (hex pubkey, role) pairs.
  std::set<std::pair<std::string, std::string>> stored_members(std::int64_t community_id);

  /// The key the community `community_id` signs with (derived from relay_key).
  protocol::key_pair signer(std::int64_t community_id) const;

  protocol::key_pair relay_key;
  storage::membership_store members;
};

/// Runs `pod` on two connections of their own, both started while the community row lock is
/// held and let go together once both wait on it. False when they never both waited.
bool two_pods_behind_the_lock(membership_fixture& f,
                              const std::function<void(storage::pg_connection&)>& pod);

/// (hex, role) pairs named by a list.
std::set<std::pair<std::string, std::string>> listed(const protocol::event& list);

storage::membership_command command(storage::membership_change change,
                                    const protocol::bytes32& subject,
                                    storage::member_role role = storage::member_role::member);

std::int64_t now_seconds();

/// A test's clock never sleeps: asked to wait for a second, it jumps there.
std::int64_t skip_to_second(std::int64_t second);

/// `store.apply_paced` from now, jumping over the seconds a list must wait for.
storage::membership_write paced(storage::membership_store& store, std::int64_t community_id,
                                std::span<const storage::membership_command> commands);

} // namespace comb::test
