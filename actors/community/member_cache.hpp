// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "protocol/hex.hpp"
#include "storage/membership.hpp"

namespace comb::actors {

/// A community's members as this pod last saw them: written by its community actor (after each
/// commit, or from another pod's list), read by every connection for access checks.
class member_cache {
public:
  [[nodiscard]] std::optional<storage::member_role> role_of(const protocol::bytes32& pubkey) const {
    std::shared_lock lock(mutex_);
    auto it = roles_.find(pubkey);
    if (it == roles_.end())
      return std::nullopt;
    return it->second;
  }

  [[nodiscard]] bool is_member(const protocol::bytes32& pubkey) const {
    return role_of(pubkey).has_value();
  }

  /// Replaces the members; returns those who lost membership or were demoted.
  std::vector<protocol::bytes32> replace(const std::vector<storage::member>& members) {
    std::unordered_map<protocol::bytes32, storage::member_role, protocol::bytes32_hash> next;
    for (const auto& m : members)
      next.emplace(m.pubkey, m.role);
    std::unique_lock lock(mutex_);
    std::vector<protocol::bytes32> lost;
    for (const auto& [pubkey, role] : roles_) {
      auto it = next.find(pubkey);
      if (it == next.end() || rank(it->second) < rank(role))
        lost.push_back(pubkey);
    }
    roles_ = std::move(next);
    return lost;
  }

  [[nodiscard]] std::size_t size() const {
    std::shared_lock lock(mutex_);
    return roles_.size();
  }

private:
  static int rank(storage::member_role role) {
    return role == storage::member_role::owner ? 2 : role == storage::member_role::admin ? 1 : 0;
  }

  mutable std::shared_mutex mutex_;
  std::unordered_map<protocol::bytes32, storage::member_role, protocol::bytes32_hash> roles_;
};

using member_cache_ptr = std::shared_ptr<member_cache>;

} // namespace comb::actors
