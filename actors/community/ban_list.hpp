// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "protocol/hex.hpp"
#include "storage/management_store.hpp"

namespace comb::actors {

/// A community's NIP-86 bans as this pod last saw them: loaded from the database with the
/// community actor, changed by it after each committed ban, read by every connection of the
/// community (a banned author's events and a banned event id are refused before storage, and
/// are not delivered live once the ban is known: one may be on its way, from another pod or
/// held for a subscription still reading history).
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

  /// Whether `ev` may not go out: its author or its id is banned. Without any ban (the common
  /// case) no lock is taken: this is asked for every live delivery.
  [[nodiscard]] bool withholds(const protocol::event& ev) const {
    if (!any_.load(std::memory_order_acquire))
      return false;
    std::shared_lock lock(mutex_);
    return pubkeys_.contains(ev.pubkey) || events_.contains(ev.id);
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
    note_any();
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
    note_any();
  }

  /// Under the unique lock.
  void note_any() { any_.store(!pubkeys_.empty() || !events_.empty(), std::memory_order_release); }

  mutable std::shared_mutex mutex_;
  std::atomic<bool> any_{false};
  set pubkeys_;
  set events_;
};

using ban_list_ptr = std::shared_ptr<ban_list>;

} // namespace comb::actors
