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
    // Roles follow the key (NIP-43); "member" is how comb wrote a plain member before.
    member m{tag[1], {}};
    for (std::size_t i = 2; i < tag.size(); ++i)
      if (tag[i] != "member")
        m.roles.push_back(tag[i]);
    list.members.push_back(std::move(m));
  }
  return list;
}

bool names_as_manager(const membership_list& list, std::string_view viewer) {
  return std::any_of(list.members.begin(), list.members.end(), [&](const member& m) {
    return m.pubkey == viewer && std::any_of(m.roles.begin(), m.roles.end(), [](const auto& r) {
             return r == owner_role_id || r == admin_role_id;
           });
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
