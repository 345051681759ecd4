// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "actors/community/room_index.hpp"
#include "protocol/hex.hpp"
#include "storage/membership.hpp"

namespace comb::actors {

/// A community's members and access as this pod last saw them in the database: written only by
/// its community actor (after its own commits, and from reloads when the database notifies a
/// change), read by every connection for access checks.
class member_cache {
public:
  /// Closed (AUTH and membership required) or open, once the database said so.
  [[nodiscard]] std::optional<bool> closed() const {
    int value = closed_.load(std::memory_order_acquire);
    return value < 0 ? std::nullopt : std::optional<bool>(value == 1);
  }

  void set_closed(bool closed) { closed_.store(closed ? 1 : 0, std::memory_order_release); }

  /// Whether plain members may mint invites (owner and admins always may), once the database
  /// said so: until then, and where it says no, their invite REQs are refused without a
  /// statement on the pod's one membership writer.
  [[nodiscard]] bool members_may_invite() const { return members_may_invite_.load(std::memory_order_acquire); }

  void set_members_may_invite(bool may) { members_may_invite_.store(may, std::memory_order_release); }

  /// Archived or deleted, as this pod last saw the database: a connection that gets this far
  /// (its host looked up just before the change) is closed as it registers.
  [[nodiscard]] bool ended() const { return ended_.load(std::memory_order_acquire); }

  void set_ended(bool ended) { ended_.store(ended, std::memory_order_release); }

  /// The state version up to which the access and the bans are both current: a membership
  /// write returns members, so it moves them only where nothing else wrote since
  /// (confirm_access).
  [[nodiscard]] std::int64_t access_version() const {
    return access_version_.load(std::memory_order_acquire);
  }

  void set_access_version(std::int64_t version) {
    access_version_.store(version, std::memory_order_release);
  }

  /// The access and bans are current at `version` too (this pod's own write, which follows its
  /// own ban changes, was the only change since `from`).
  void confirm_access(std::int64_t from, std::int64_t version) {
    std::int64_t expected = from;
    access_version_.compare_exchange_strong(expected, version);
  }

  /// Every version below any the database can name, so that the next state applied is taken
  /// whatever its version: the database went back to an older state (a restore, a failover).
  void rewind_versions() {
    version_.store(rewound_version, std::memory_order_release);
    rooms_version_.store(rewound_version, std::memory_order_release);
    access_version_.store(rewound_version, std::memory_order_release);
  }

  static constexpr std::int64_t rewound_version = -1;

  /// The community's state version these members come from (never goes back, but for
  /// rewind_versions).
  [[nodiscard]] std::int64_t version() const { return version_.load(std::memory_order_acquire); }

  void set_version(std::int64_t version) {
    std::int64_t seen = version_.load();
    while (seen < version && !version_.compare_exchange_weak(seen, version)) {
    }
  }

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

  /// The community's rooms (NIP-29); never null.
  [[nodiscard]] room_index_ptr rooms() const {
    std::shared_lock lock(mutex_);
    return rooms_;
  }

  /// The state version the rooms were loaded at: rooms follow the database like members do,
  /// but a membership write (which returns members, not rooms) does not refresh them.
  [[nodiscard]] std::int64_t rooms_version() const {
    return rooms_version_.load(std::memory_order_acquire);
  }

  /// The version up to which this cache holds the community's whole state: members, rooms and
  /// access may have been taken from different writes, and a change this pod has not loaded
  /// (an access switch, another pod's ban) keeps it below that change's version until reloaded.
  [[nodiscard]] std::int64_t whole_version() const {
    return std::min({version(), rooms_version(), access_version()});
  }

  void set_rooms(room_index_ptr rooms, std::int64_t version) {
    std::unique_lock lock(mutex_);
    rooms_ = std::move(rooms);
    rooms_version_.store(version, std::memory_order_release);
  }

  /// The rooms are known to be current at `version` too (nothing changed them meanwhile).
  void confirm_rooms(std::int64_t from, std::int64_t version) {
    std::int64_t expected = from;
    rooms_version_.compare_exchange_strong(expected, version);
  }

private:
  static int rank(storage::member_role role) {
    return role == storage::member_role::owner ? 2 : role == storage::member_role::admin ? 1 : 0;
  }

  std::atomic<int> closed_{-1};
  std::atomic<bool> ended_{false};
  std::atomic<bool> members_may_invite_{false};
  std::atomic<std::int64_t> version_{0};
  mutable std::shared_mutex mutex_;
  std::unordered_map<protocol::bytes32, storage::member_role, protocol::bytes32_hash> roles_;
  room_index_ptr rooms_ = std::make_shared<const room_index>();
  std::atomic<std::int64_t> rooms_version_{0};
  std::atomic<std::int64_t> access_version_{0};
};

using member_cache_ptr = std::shared_ptr<member_cache>;

/// `who`'s standing in `room` as `members` holds it: in the room (its 39002), its admin, an owner
/// or admin of the community. Nobody (no `who`) has none.
[[nodiscard]] inline protocol::room_reader standing_in(const cached_room& room, const member_cache* members,
                                                       const std::optional<protocol::bytes32>& who) {
  protocol::room_reader reader;
  if (!who)
    return reader;
  auto it = room.members.find(*who);
  reader.member = it != room.members.end();
  reader.room_admin = reader.member && it->second == protocol::room_rank::admin;
  reader.community_admin = storage::manages(members ? members->role_of(*who) : std::nullopt);
  return reader;
}

} // namespace comb::actors
