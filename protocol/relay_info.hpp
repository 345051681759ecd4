// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

#include "protocol/limits.hpp"

namespace comb::protocol {

/// What a NIP-11 document says about one community's relay.
struct relay_info {
  std::string name;
  std::string description;
  /// Hex public key of the relay (`self`), which signs NIP-43 events.
  std::string self_pubkey;
  /// Hex public key of the community's owner (`pubkey`, NIP-11's admin contact); omitted when
  /// the community has none yet.
  std::string owner_pubkey;
  /// URL of the community's icon; omitted when empty.
  std::string icon;
  std::string contact;
  std::string software = "comb";
  std::string version;
  std::vector<int> supported_nips;
  protocol_limits limits;
  std::int64_t created_at_upper_seconds = 900;
  /// How far back created_at may be; 0 when not bounded (then not published).
  std::int64_t created_at_lower_seconds = 0;
  bool auth_required = false;
  bool restricted_writes = false;
};

/// The NIP-11 JSON document.
[[nodiscard]] std::string render_relay_info(const relay_info& info);

} // namespace comb::protocol
