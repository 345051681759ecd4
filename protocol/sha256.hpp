// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>

#include "protocol/hex.hpp"

namespace comb::protocol {

/// SHA-256 of `data` (NIP-01 event ids, invite code hashes).
[[nodiscard]] bytes32 sha256(std::string_view data) noexcept;

/// HMAC-SHA256 of `message` under `key`: the keys comb derives from the relay key (each
/// community's signing key, the key that seals chosen invite codes). Throws std::runtime_error
/// if OpenSSL fails.
[[nodiscard]] bytes32 hmac_sha256(const bytes32& key, std::string_view message);

} // namespace comb::protocol
