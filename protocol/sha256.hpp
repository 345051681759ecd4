// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>

#include "protocol/hex.hpp"

namespace comb::protocol {

/// SHA-256 of `data` (NIP-01 event ids, invite code hashes).
[[nodiscard]] bytes32 sha256(std::string_view data) noexcept;

} // namespace comb::protocol
