// SPDX-License-Identifier: MIT
#include "tools/watch/membership_list.hpp"

#include <algorithm>

namespace comb::watch {

std::optional<membership_list> membership_from_event(const protocol::event& ev) {
  if (ev.kind != membership_list_kind)
    return std::nullopt;
  membership_list list;
  list.created_at = ev.created_at;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0] != "member" || !is_pubkey_hex(tag[1]))
      continue;
    // A member tag without a role is a plain member (NIP-43 makes the role optional).
    list.members.push_back({tag[1], tag.size() > 2 ? tag[2] : "member"});
  }
  return list;
}

bool names_as_manager(const membership_list& list, std::string_view viewer) {
  return std::any_of(list.members.begin(), list.members.end(), [&](const member& m) {
    return m.pubkey == viewer && (m.role == "owner" || m.role == "admin");
  });
}

std::vector<pubkey_hex> roster_of(const membership_list& list) {
  std::vector<pubkey_hex> keys;
  keys.reserve(list.members.size());
  for (const auto& m : list.members)
    keys.push_back(m.pubkey);
  return keys;
}

} // namespace comb::watch
