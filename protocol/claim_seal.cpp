// SPDX-License-Identifier: MIT
#include "protocol/claim_seal.hpp"

#include <array>
#include <memory>
#include <openssl/evp.h>
#include <stdexcept>
#include <vector>

#include "protocol/sha256.hpp"

namespace comb::protocol {
namespace {

constexpr std::string_view derivation_label = "comb invite claim sealing key v1";
constexpr std::string_view lookup_label = "comb invite claim lookup key v1";
constexpr std::size_t nonce_bytes = 12;
constexpr std::size_t tag_bytes = 16;

struct cipher_context_free {
  void operator()(EVP_CIPHER_CTX* ctx) const noexcept { EVP_CIPHER_CTX_free(ctx); }
};
using cipher_context = std::unique_ptr<EVP_CIPHER_CTX, cipher_context_free>;

bytes32 sealing_key(const key_pair& relay_key) {
  return hmac_sha256(relay_key.secret(), derivation_label);
}

std::array<unsigned char, 8> associated_data(std::int64_t community_id) {
  std::array<unsigned char, 8> out{};
  auto value = static_cast<std::uint64_t>(community_id);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<unsigned char>(value >> (8 * (out.size() - 1 - i)));
  return out;
}

/// The context set up for `encrypt` (1) or decrypt (0) with the key, nonce and associated data.
cipher_context start(int encrypt, const bytes32& key, const unsigned char* nonce, std::int64_t community_id) {
  cipher_context ctx(EVP_CIPHER_CTX_new());
  auto aad = associated_data(community_id);
  int written = 0;
  if (!ctx || EVP_CipherInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce, encrypt) != 1
      || EVP_CipherUpdate(ctx.get(), nullptr, &written, aad.data(), static_cast<int>(aad.size())) != 1)
    return nullptr;
  return ctx;
}

} // namespace

std::string seal_claim(const key_pair& relay_key, std::int64_t community_id, std::string_view claim) {
  std::vector<std::uint8_t> sealed(nonce_bytes + claim.size() + tag_bytes);
  fill_random(std::span(sealed.data(), nonce_bytes));
  auto ctx = start(1, sealing_key(relay_key), sealed.data(), community_id);
  int written = 0, finished = 0;
  unsigned char* body = sealed.data() + nonce_bytes;
  if (!ctx
      || EVP_CipherUpdate(ctx.get(), body, &written, reinterpret_cast<const unsigned char*>(claim.data()),
                          static_cast<int>(claim.size())) != 1
      || EVP_CipherFinal_ex(ctx.get(), body + written, &finished) != 1
      || EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, tag_bytes, body + claim.size()) != 1)
    throw std::runtime_error("AES-256-GCM failed");
  return to_hex(sealed);
}

std::optional<std::string> open_claim(const key_pair& relay_key, std::int64_t community_id,
                                      std::string_view sealed_hex) {
  if (sealed_hex.size() % 2 != 0 || sealed_hex.size() < 2 * (nonce_bytes + tag_bytes))
    return std::nullopt;
  std::vector<std::uint8_t> sealed(sealed_hex.size() / 2);
  if (!decode_lower_hex(sealed_hex, sealed))
    return std::nullopt;
  const std::size_t length = sealed.size() - nonce_bytes - tag_bytes;
  std::string claim(length, '\0');
  auto ctx = start(0, sealing_key(relay_key), sealed.data(), community_id);
  int written = 0, finished = 0;
  unsigned char* out = reinterpret_cast<unsigned char*>(claim.data());
  if (!ctx
      || EVP_CipherUpdate(ctx.get(), out, &written, sealed.data() + nonce_bytes, static_cast<int>(length)) != 1
      || EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, tag_bytes, sealed.data() + nonce_bytes + length) != 1
      || EVP_CipherFinal_ex(ctx.get(), out + written, &finished) != 1) // the tag is checked here
    return std::nullopt;
  return claim;
}

std::string claim_lookup_hash(const key_pair& relay_key, std::int64_t community_id, std::string_view claim) {
  auto id = associated_data(community_id);
  std::string message(reinterpret_cast<const char*>(id.data()), id.size());
  message.append(claim);
  return to_hex(hmac_sha256(hmac_sha256(relay_key.secret(), lookup_label), message));
}

} // namespace comb::protocol
