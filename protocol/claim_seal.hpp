// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/signature.hpp"

namespace comb::protocol {

/// An invite code an owner or admin chose (NIP-86 createclaim), sealed for the database so that
/// listclaims can show it again while a copy of the database alone reveals no code (the codes
/// themselves are looked up by hash): AES-256-GCM under a key derived from the relay key
/// (HMAC-SHA256 with a label of its own), the community's id as associated data, so a sealed
/// code moved to another community's row does not open. Lowercase hex of nonce, ciphertext, tag.
[[nodiscard]] std::string seal_claim(const key_pair& relay_key, std::int64_t community_id,
                                     std::string_view claim);

/// The code `sealed` holds, or nothing when it was not sealed with this relay key for this
/// community (another deployment's key, a hand edit).
[[nodiscard]] std::optional<std::string> open_claim(const key_pair& relay_key, std::int64_t community_id,
                                                    std::string_view sealed);

/// The hash a chosen code is looked up by in `community_id` (lowercase hex): HMAC-SHA256 under
/// another key derived from the relay key. A minted code (128 random bits) is safe behind a
/// plain SHA-256; a chosen one may have far fewer bits (newer Flotilla's: about 52), and a copy
/// of the database alone must give no way to test guesses against it.
[[nodiscard]] std::string claim_lookup_hash(const key_pair& relay_key, std::int64_t community_id,
                                            std::string_view claim);

} // namespace comb::protocol
