// SPDX-License-Identifier: MIT
#include "protocol/signature.hpp"

#include <array>
#include <cstdlib>
#include <cstring>
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <sys/random.h>

namespace comb::protocol {
namespace {

static_assert(sizeof(secp256k1_keypair) == 96);

// One context for the process: creating one costs far more than a verify, and a const context
// is safe to share between threads.
const secp256k1_context* context() {
  static const secp256k1_context* ctx = [] {
    secp256k1_context* c = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    bytes32 seed{};
    fill_random(seed);
    if (secp256k1_context_randomize(c, seed.data()) != 1)
      std::abort();
    return c;
  }();
  return ctx;
}

struct parsed_key_slot {
  bytes32 raw{};
  secp256k1_xonly_pubkey parsed{};
  bool filled = false;
};

// Parsing an x-only key costs a field square root, about a quarter of a verify. Authors repeat,
// so each thread keeps a small direct-mapped cache of parsed keys (about 100 KiB).
constexpr std::size_t parsed_key_slots = 1024;

const secp256k1_xonly_pubkey* parsed_public_key(const bytes32& public_key) {
  thread_local std::array<parsed_key_slot, parsed_key_slots> cache;
  auto& slot = cache[bytes32_hash{}(public_key) % parsed_key_slots];
  if (slot.filled && slot.raw == public_key)
    return &slot.parsed;
  if (secp256k1_xonly_pubkey_parse(context(), &slot.parsed, public_key.data()) != 1) {
    slot.filled = false;
    return nullptr;
  }
  slot.raw = public_key;
  slot.filled = true;
  return &slot.parsed;
}

} // namespace

void fill_random(std::span<std::uint8_t> out) {
  std::size_t filled = 0;
  while (filled < out.size()) {
    ssize_t got = getrandom(out.data() + filled, out.size() - filled, 0);
    if (got < 0)
      std::abort();
    filled += static_cast<std::size_t>(got);
  }
}

bool verify_schnorr(const bytes32& public_key,
                    const bytes32& message,
                    const bytes64& signature) noexcept {
  const secp256k1_xonly_pubkey* key = parsed_public_key(public_key);
  if (!key)
    return false;
  return secp256k1_schnorrsig_verify(context(), signature.data(), message.data(), message.size(),
                                     key)
         == 1;
}

std::optional<key_pair> key_pair::from_secret(const bytes32& secret) {
  key_pair pair;
  auto* native = reinterpret_cast<secp256k1_keypair*>(pair.opaque_.data());
  if (secp256k1_keypair_create(context(), native, secret.data()) != 1)
    return std::nullopt;
  secp256k1_xonly_pubkey xonly;
  if (secp256k1_keypair_xonly_pub(context(), &xonly, nullptr, native) != 1)
    return std::nullopt;
  if (secp256k1_xonly_pubkey_serialize(context(), pair.public_key_.data(), &xonly) != 1)
    return std::nullopt;
  pair.secret_ = secret;
  return pair;
}

key_pair key_pair::generate() {
  for (;;) {
    bytes32 secret{};
    fill_random(secret);
    if (auto pair = from_secret(secret))
      return *pair;
  }
}

bytes64 key_pair::sign(const bytes32& message) const {
  bytes32 aux{};
  fill_random(aux);
  return sign(message, aux);
}

bytes64 key_pair::sign(const bytes32& message, const bytes32& aux) const {
  bytes64 signature{};
  auto* native = reinterpret_cast<const secp256k1_keypair*>(opaque_.data());
  if (secp256k1_schnorrsig_sign32(context(), signature.data(), message.data(), native, aux.data())
      != 1)
    std::abort(); // cannot fail for a valid key pair
  return signature;
}

} // namespace comb::protocol
