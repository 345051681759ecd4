// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/room_rules.hpp"

namespace comb::actors {

/// One room as access checks need it: its flags and who is in it.
struct cached_room {
  protocol::room_flags flags;
  std::unordered_map<protocol::bytes32, bool, protocol::bytes32_hash> members; ///< pubkey -> room admin
};

/// A community's rooms as this pod last loaded them from the database (immutable once built;
/// replaced whole).
class room_index {
public:
  room_index() = default;

  explicit room_index(const std::vector<protocol::room_state>& rooms) {
    for (const auto& room : rooms) {
      cached_room& cached = rooms_[room.id];
      cached.flags = room.meta.flags;
      for (const auto& member : room.members) {
        bool admin = std::find(member.roles.begin(), member.roles.end(), protocol::room_admin_role)
                     != member.roles.end();
        cached.members.emplace(member.pubkey, admin);
      }
    }
  }

  [[nodiscard]] const cached_room* find(const std::string& id) const {
    auto it = rooms_.find(id);
    return it == rooms_.end() ? nullptr : &it->second;
  }

  [[nodiscard]] std::size_t size() const noexcept { return rooms_.size(); }

  [[nodiscard]] const std::unordered_map<std::string, cached_room>& all() const noexcept {
    return rooms_;
  }

private:
  std::unordered_map<std::string, cached_room> rooms_;
};

using room_index_ptr = std::shared_ptr<const room_index>;

} // namespace comb::actors
