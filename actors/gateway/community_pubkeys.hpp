// SPDX-License-Identifier: MIT
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "protocol/signature.hpp"

namespace comb::actors {

/// Each community's public signing key as NIP-11 `self` shows it, by primary host: derived
/// from the relay key once per community (protocol::derive_community_key), then shared by every
/// session. Only hosts of stored communities reach it, so it holds one entry per community.
class community_pubkeys {
public:
  explicit community_pubkeys(const protocol::key_pair& relay_key) : relay_key_(relay_key) {}

  /// Lowercase hex of the key that signs for the community whose primary host is `primary_host`.
  [[nodiscard]] std::string hex_of(const std::string& primary_host);

private:
  protocol::key_pair relay_key_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::string> hex_by_host_;
};

} // namespace comb::actors
