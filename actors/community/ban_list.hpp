// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "protocol/canonical_json.hpp"
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
    return holds(ev.pubkey, ev.id);
  }

  /// withholds for an event given as its JSON (a history row): it was read before a ban this
  /// pod has loaded since, or it would not be there. One whose author and id cannot be read is
  /// withheld while any ban stands.
  [[nodiscard]] bool withholds_rendered(std::string_view json) const {
    if (!any_.load(std::memory_order_acquire))
      return false;
    auto identity = protocol::identity_of_rendered(json);
    return !identity || holds(identity->pubkey, identity->id);
  }

  /// Replaces everything with the bans stored as of state version `as_of`
  /// (`storage::load_bans`), then replays this pod's own changes committed after it: a reload
  /// read before this pod's newer ban must neither roll that ban back nor be ignored (it may
  /// hold another pod's ban that this pod's writes keep overtaking).
  void replace(const storage::community_bans& bans, std::int64_t as_of) {
    set pubkeys, events;
    for (const auto& entry : bans.pubkeys)
      pubkeys.insert(entry.key);
    for (const auto& entry : bans.events)
      events.insert(entry.key);
    std::unique_lock lock(mutex_);
    forget_through(as_of);
    std::stable_sort(own_changes_.begin(), own_changes_.end(),
                     [](const own_change& a, const own_change& b) { return a.version < b.version; });
    for (const auto& change : own_changes_)
      apply(change.of_event ? events : pubkeys, change.key, change.banned);
    pubkeys_ = std::move(pubkeys);
    events_ = std::move(events);
    loaded_as_of_ = std::max(loaded_as_of_, as_of);
    note_any();
  }

  /// This pod's own committed change, at state version `version` (0: unknown, not replayed).
  void set_pubkey(const protocol::bytes32& pubkey, bool banned, std::int64_t version) {
    record({version, false, pubkey, banned});
  }

  void set_event(const protocol::bytes32& id, bool banned, std::int64_t version) {
    record({version, true, id, banned});
  }

  /// The database went back to an older state: own changes it may have lost are not replayed.
  void forget_own_changes() {
    std::unique_lock lock(mutex_);
    own_changes_.clear();
    loaded_as_of_ = 0;
  }

  /// The list holds the database's bans as of `version` (this pod's own write there was
  /// confirmed on the state it had loaded): no reload older than it will replace it, so the own
  /// changes up to it need no replay.
  void settled(std::int64_t version) {
    std::unique_lock lock(mutex_);
    forget_through(version);
  }

  /// Own changes kept for replay: each goes with the first reload as new as it, or when a later
  /// own write of this pod is confirmed (settled).
  [[nodiscard]] std::size_t own_changes_kept() const {
    std::shared_lock lock(mutex_);
    return own_changes_.size();
  }

private:
  /// Whether the author or the id is banned.
  [[nodiscard]] bool holds(const protocol::bytes32& pubkey, const protocol::bytes32& id) const {
    std::shared_lock lock(mutex_);
    return pubkeys_.contains(pubkey) || events_.contains(id);
  }

  using set = std::unordered_set<protocol::bytes32, protocol::bytes32_hash>;

  struct own_change {
    std::int64_t version = 0;
    bool of_event = false;
    protocol::bytes32 key;
    bool banned = false;
  };

  static void apply(set& target, const protocol::bytes32& key, bool banned) {
    if (banned)
      target.insert(key);
    else
      target.erase(key);
  }

  /// A change committed at or before the state last loaded is in it, or was overtaken by
  /// something newer there (the writer's reply can arrive after the watcher's reload).
  void record(const own_change& change) {
    std::unique_lock lock(mutex_);
    if (change.version != 0 && change.version <= loaded_as_of_)
      return;
    apply(change.of_event ? events_ : pubkeys_, change.key, change.banned);
    if (change.version > 0)
      own_changes_.push_back(change);
    note_any();
  }

  /// Under the unique lock: own changes up to `version` need no replay.
  void forget_through(std::int64_t version) {
    std::erase_if(own_changes_, [&](const own_change& change) { return change.version <= version; });
  }

  /// Under the unique lock.
  void note_any() { any_.store(!pubkeys_.empty() || !events_.empty(), std::memory_order_release); }

  mutable std::shared_mutex mutex_;
  std::atomic<bool> any_{false};
  set pubkeys_;
  set events_;
  std::vector<own_change> own_changes_;
  std::int64_t loaded_as_of_ = 0;
};

using ban_list_ptr = std::shared_ptr<ban_list>;

} // namespace comb::actors
