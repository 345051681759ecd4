// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <optional>

#include "protocol/hex.hpp"

namespace comb::protocol {

/// BIP-340 Schnorr verification of a 32-byte message against an x-only public key.
/// Returns false for a key that is not on the curve as well as for a bad signature.
[[nodiscard]] bool verify_schnorr(const bytes32& public_key,
                                  const bytes32& message,
                                  const bytes64& signature) noexcept;

/// A secp256k1 key pair that signs with BIP-340. Holds the secret; never logged or printed.
class key_pair {
public:
  /// Nothing when `secret` is zero or not below the curve order.
  [[nodiscard]] static std::optional<key_pair> from_secret(const bytes32& secret);

  /// A fresh key pair from the operating system's random source.
  [[nodiscard]] static key_pair generate();

  [[nodiscard]] const bytes32& public_key() const noexcept { return public_key_; }

  [[nodiscard]] const bytes32& secret() const noexcept { return secret_; }

  /// Signs with fresh auxiliary randomness, as BIP-340 recommends.
  [[nodiscard]] bytes64 sign(const bytes32& message) const;

  /// Signs with caller-given auxiliary data (test vectors need this).
  [[nodiscard]] bytes64 sign(const bytes32& message, const bytes32& aux) const;

private:
  key_pair() = default;

  // secp256k1_keypair is an opaque 96-byte struct; kept as bytes so this header stays free of
  // the library's headers.
  std::array<unsigned char, 96> opaque_{};
  bytes32 secret_{};
  bytes32 public_key_{};
};

/// Cryptographically secure random bytes (getrandom); aborts if the kernel cannot supply them.
void fill_random(std::span<std::uint8_t> out);

} // namespace comb::protocol
