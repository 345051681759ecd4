// SPDX-License-Identifier: MIT
#include "storage/bridge_auth.hpp"

#include <array>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

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

std::string hmac_hex(std::string_view secret, const std::string& message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  const auto* ok = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                        reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                        digest.data(), &length);
  if (ok == nullptr)
    return {}; // never equal to a claimed MAC: matches() refuses empty values
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

std::string envelope_message(std::string_view origin, std::int64_t community_id,
                             const protocol::bytes32& event_id) {
  std::string message;
  frame(message, "comb-envelope-v1");
  frame(message, origin);
  frame(message, std::to_string(community_id));
  frame(message, protocol::to_hex(event_id));
  return message;
}

} // namespace

std::string cluster_proof(std::string_view secret, proof_role role, std::string_view nonce,
                          std::string_view prover, std::string_view verifier) {
  return hmac_hex(secret, proof_message(role, nonce, prover, verifier));
}

bool proof_matches(std::string_view secret, proof_role role, std::string_view nonce,
                   std::string_view prover, std::string_view verifier, std::string_view claimed) {
  return same(cluster_proof(secret, role, nonce, prover, verifier), claimed);
}

std::string envelope_mac(std::string_view secret, std::string_view origin,
                         std::int64_t community_id, const protocol::bytes32& event_id) {
  return hmac_hex(secret, envelope_message(origin, community_id, event_id));
}

bool envelope_mac_matches(std::string_view secret, std::string_view origin,
                          std::int64_t community_id, const protocol::bytes32& event_id,
                          std::string_view claimed) {
  return same(envelope_mac(secret, origin, community_id, event_id), claimed);
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
