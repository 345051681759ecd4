// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>

#include "protocol/signature.hpp"

namespace comb::protocol {

/// The key that signs one community's lists, deltas, role definitions and room state, and that
/// its host's NIP-11 `self` names: derived from the relay key and the community's primary host
/// (HMAC-SHA256), so every pod holding the relay key signs with it and nothing more is stored.
/// Each community needs a key of its own: apps keep one replaceable event per kind and author
/// across relays, so two communities signing with one key would show each other's member list.
[[nodiscard]] key_pair derive_community_key(const key_pair& relay_key, std::string_view primary_host);

} // namespace comb::protocol
