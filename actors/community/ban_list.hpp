// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "protocol/hex.hpp"
#include "storage/management_store.hpp"

namespace comb::actors {

/// A community's NIP-86 bans as this pod last saw them: loaded from the database with the
/// community actor, changed by it after each committed ban, read by every connection of the
/// community (a banned author's events and a banned event id are refused before storage).
class ban_list {
public:
  [[nodiscard]] bool is_banned_pubkey(const protocol::bytes32& pubkey) const {
    std::shared_lock lock(mutex_);
    return pubkeys_.contains(pubkey);
  }

  [[nodiscard]] bool is_banned_event(const protocol::bytes32& id) const {
    std::shared_lock lock(mutex_);
    return events_.contains(id);
  }

  /// Replaces everything with the stored bans (`storage::load_bans`).
  void replace(const storage::community_bans& bans) {
    set pubkeys, events;
    for (const auto& entry : bans.pubkeys)
      pubkeys.insert(entry.key);
    for (const auto& entry : bans.events)
      events.insert(entry.key);
    std::unique_lock lock(mutex_);
    pubkeys_ = std::move(pubkeys);
    events_ = std::move(events);
  }

  void set_pubkey(const protocol::bytes32& pubkey, bool banned) { change(pubkeys_, pubkey, banned); }

  void set_event(const protocol::bytes32& id, bool banned) { change(events_, id, banned); }

private:
  using set = std::unordered_set<protocol::bytes32, protocol::bytes32_hash>;

  void change(set& target, const protocol::bytes32& key, bool banned) {
    std::unique_lock lock(mutex_);
    if (banned)
      target.insert(key);
    else
      target.erase(key);
  }

  mutable std::shared_mutex mutex_;
  set pubkeys_;
  set events_;
};

using ban_list_ptr = std::shared_ptr<ban_list>;

} // namespace comb::actors
