// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/hex.hpp"

namespace comb::protocol {

/// Bech32 (BIP-173) encoding of a 32-byte key with the given prefix: "npub" or "nsec".
[[nodiscard]] std::string encode_nip19(std::string_view prefix, const bytes32& key);

/// Decodes a bech32 key whose prefix is `prefix`; nothing on a bad checksum, prefix or length.
[[nodiscard]] std::optional<bytes32> decode_nip19(std::string_view text, std::string_view prefix);

/// A public key written as 64 lowercase hex characters or as an npub.
[[nodiscard]] std::optional<bytes32> parse_public_key(std::string_view text);

/// A secret key written as 64 lowercase hex characters or as an nsec.
[[nodiscard]] std::optional<bytes32> parse_secret_key(std::string_view text);

} // namespace comb::protocol
