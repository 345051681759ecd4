// SPDX-License-Identifier: MIT
#include "storage/bridge_auth.hpp"

#include <array>
#include <initializer_list>
#include <memory>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

namespace comb::storage {
namespace {

/// Each field with its length in front, so no choice of node ids or nonces can make two
/// different tuples hash the same bytes.
void frame(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
  out += ';';
}

struct mac_context_free {
  void operator()(EVP_MAC_CTX* ctx) const noexcept { EVP_MAC_CTX_free(ctx); }
};
using mac_context = std::unique_ptr<EVP_MAC_CTX, mac_context_free>;

EVP_MAC* hmac_algorithm() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

/// An HMAC-SHA256 context keyed with `secret`, kept per thread for the last secret used. The
/// one-shot HMAC() fetches HMAC and SHA-256 from the provider tables and keys a fresh context
/// on every call: several times the MAC of an envelope's short message, once per event bridged.
EVP_MAC_CTX* keyed_context(std::string_view secret) {
  thread_local std::string key;
  thread_local mac_context ctx;
  if (ctx && key == secret)
    return ctx.get();
  ctx.reset(hmac_algorithm() ? EVP_MAC_CTX_new(hmac_algorithm()) : nullptr);
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest_name, 0),
                         OSSL_PARAM_construct_end()};
  // Never a null key pointer: OpenSSL reads that as "keep the previous key".
  const auto* bytes = reinterpret_cast<const unsigned char*>(secret.empty() ? "" : secret.data());
  if (!ctx || EVP_MAC_init(ctx.get(), bytes, secret.size(), params) != 1) {
    ctx.reset();
    return nullptr;
  }
  key = secret;
  return ctx.get();
}

/// HMAC over the concatenation of `parts`, hex; empty when OpenSSL fails.
std::string hmac_hex(std::string_view secret, std::initializer_list<std::string_view> parts) {
  EVP_MAC_CTX* keyed = keyed_context(secret);
  if (!keyed)
    return {}; // never equal to a claimed MAC: matches() refuses empty values
  mac_context ctx(EVP_MAC_CTX_dup(keyed));
  if (!ctx)
    return {};
  for (auto part : parts)
    if (EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()), part.size())
        != 1)
      return {};
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  std::size_t length = 0;
  if (EVP_MAC_final(ctx.get(), digest.data(), &length, digest.size()) != 1)
    return {};
  return protocol::to_hex(std::span<const std::uint8_t>(digest.data(), length));
}

bool same(const std::string& expected, std::string_view claimed) {
  return !expected.empty() && expected.size() == claimed.size()
         && CRYPTO_memcmp(expected.data(), claimed.data(), expected.size()) == 0;
}

std::string proof_message(proof_role role, std::string_view nonce, std::string_view prover,
                          std::string_view verifier) {
  std::string message;
  frame(message, "comb-cluster-proof-v1");
  frame(message, role == proof_role::acceptor ? "acceptor" : "dialer");
  frame(message, nonce);
  frame(message, prover);
  frame(message, verifier);
  return message;
}

/// Domain separation: an envelope MAC is never a valid handshake proof, nor the reverse.
constexpr std::string_view envelope_domain = "16:comb-envelope-v2;";

} // namespace

std::string cluster_proof(std::string_view secret, proof_role role, std::string_view nonce,
                          std::string_view prover, std::string_view verifier) {
  return hmac_hex(secret, {proof_message(role, nonce, prover, verifier)});
}

bool proof_matches(std::string_view secret, proof_role role, std::string_view nonce,
                   std::string_view prover, std::string_view verifier, std::string_view claimed) {
  return same(cluster_proof(secret, role, nonce, prover, verifier), claimed);
}

std::string envelope_mac(std::string_view secret, std::string_view body) {
  return hmac_hex(secret, {envelope_domain, body});
}

bool envelope_mac_matches(std::string_view secret, std::string_view body,
                          std::string_view claimed) {
  return same(envelope_mac(secret, body), claimed);
}

std::optional<std::string> cluster_secret_problem(std::string_view secret) {
  const std::string how = "make one with: head -c 32 /dev/urandom | xxd -p -c 64";
  if (secret.empty())
    return "COMB_CLUSTER_SECRET is required with Redis or cluster links (it authenticates "
           "peers and every envelope); "
           + how;
  if (secret.size() < min_cluster_secret)
    return "COMB_CLUSTER_SECRET must be at least " + std::to_string(min_cluster_secret)
           + " characters; " + how;
  return std::nullopt;
}

} // namespace comb::storage
