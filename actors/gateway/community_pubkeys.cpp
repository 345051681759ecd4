// SPDX-License-Identifier: MIT
#include "actors/gateway/community_pubkeys.hpp"

#include "protocol/community_key.hpp"

namespace comb::actors {

std::string community_pubkeys::hex_of(const std::string& primary_host) {
  std::lock_guard lock(mutex_);
  auto known = hex_by_host_.find(primary_host);
  if (known == hex_by_host_.end()) {
    auto key = protocol::derive_community_key(relay_key_, primary_host);
    known = hex_by_host_.emplace(primary_host, protocol::to_hex(key.public_key())).first;
  }
  return known->second;
}

} // namespace comb::actors
