// SPDX-License-Identifier: MIT
#include "protocol/kind_rules.hpp"
#include "protocol/room.hpp"

#include <algorithm>

namespace comb::protocol {

bool relay_signed_kind(std::uint32_t kind) noexcept {
  return kind == 13534 || kind == 8000 || kind == 8001 || kind == 28935 || kind == 33534
         || is_room_state_kind(kind);
}

bool state_request_kind(std::uint32_t kind) noexcept {
  return kind == 28934 || kind == 28936 || (kind >= 9000 && kind <= 9022)
         || (kind >= 9030 && kind <= 9032);
}

std::size_t deletion_targets(const event& ev) noexcept {
  return static_cast<std::size_t>(std::count_if(ev.tags.begin(), ev.tags.end(), [](const auto& t) {
    return t.size() >= 2 && (t[0] == "e" || t[0] == "a");
  }));
}

} // namespace comb::protocol
