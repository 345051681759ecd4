// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "protocol/room_rules.hpp"

namespace comb::actors {

/// One room as access checks need it: its flags and who is in it.
struct cached_room {
  protocol::room_flags flags;
  std::unordered_map<protocol::bytes32, protocol::room_rank, protocol::bytes32_hash> members;
};

/// A community's rooms as this pod last loaded them from the database (immutable once built;
/// replaced whole), and the rooms this pod saw deleted since it started: a room's events are
/// deleted with it, but one read or sent before (a history page, a bridged event, one stored by
/// a writer that raced the deletion) may still be on its way, and must not show for want of the
/// room that hid it.
class room_index {
public:
  /// Rooms deleted that are remembered, the newest kept.
  static constexpr std::size_t max_remembered_deletions = 1024;

  room_index() = default;

  /// `before`: the index this one replaces (its rooms missing here were deleted).
  explicit room_index(const std::vector<protocol::room_state>& rooms,
                      const room_index* before = nullptr) {
    for (const auto& room : rooms) {
      cached_room& cached = rooms_[room.id];
      cached.flags = room.meta.flags;
      for (const auto& member : room.members)
        cached.members.emplace(member.pubkey, protocol::rank_in(&member));
    }
    if (before)
      remember_deletions(*before);
  }

  [[nodiscard]] const cached_room* find(const std::string& id) const {
    auto it = rooms_.find(id);
    return it == rooms_.end() ? nullptr : &it->second;
  }

  [[nodiscard]] std::size_t size() const noexcept { return rooms_.size(); }

  [[nodiscard]] bool was_deleted(const std::string& id) const {
    return !deleted_.empty() && deleted_.contains(id);
  }

  /// Whether any row may concern a room: one exists, or one was deleted.
  [[nodiscard]] bool concerns_rows() const noexcept { return !rooms_.empty() || !deleted_.empty(); }

  [[nodiscard]] const std::unordered_map<std::string, cached_room>& all() const noexcept {
    return rooms_;
  }

private:
  void remember_deletions(const room_index& before) {
    deletion_order_ = before.deletion_order_;
    for (const auto& [id, room] : before.rooms_)
      if (!rooms_.contains(id))
        deletion_order_.push_back(id);
    // A room created again under a deleted id is a room again.
    std::erase_if(deletion_order_, [this](const std::string& id) { return rooms_.contains(id); });
    if (deletion_order_.size() > max_remembered_deletions)
      deletion_order_.erase(deletion_order_.begin(),
                            deletion_order_.end() - static_cast<std::ptrdiff_t>(max_remembered_deletions));
    deleted_.insert(deletion_order_.begin(), deletion_order_.end());
  }

  std::unordered_map<std::string, cached_room> rooms_;
  std::vector<std::string> deletion_order_; ///< oldest first, each once
  std::unordered_set<std::string> deleted_;
};

using room_index_ptr = std::shared_ptr<const room_index>;

} // namespace comb::actors
