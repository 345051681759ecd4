// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/hex.hpp"

namespace comb::storage {

/// Who computes a handshake proof: the pod that accepted a cluster link, or the pod that dialed
/// it. Part of what a proof covers, so a proof made in one direction is useless in the other.
enum class proof_role { acceptor, dialer };

/// HMAC-SHA256 (OpenSSL) with the cluster secret over the role, the verifier's nonce, the
/// prover's node id and the verifier's node id, hex. Binding both ends and the direction is what
/// keeps a proof from being reflected back to the pod that made it or replayed to a third pod.
[[nodiscard]] std::string cluster_proof(std::string_view secret, proof_role role,
                                        std::string_view nonce, std::string_view prover,
                                        std::string_view verifier);

/// Whether `claimed` is the proof above, compared in constant time (CRYPTO_memcmp).
[[nodiscard]] bool proof_matches(std::string_view secret, proof_role role, std::string_view nonce,
                                 std::string_view prover, std::string_view verifier,
                                 std::string_view claimed);

/// HMAC-SHA256 with the cluster secret over an envelope's body (the JSON after the MAC: origin,
/// send time, community and event, every byte), hex. Covering the bytes as sent lets a receiver
/// check the MAC before it parses anything, so a stranger on the channel costs it one hash.
[[nodiscard]] std::string envelope_mac(std::string_view secret, std::string_view body);

/// Whether `claimed` is the envelope MAC above, compared in constant time.
[[nodiscard]] bool envelope_mac_matches(std::string_view secret, std::string_view body,
                                        std::string_view claimed);

/// Shortest cluster secret accepted (characters).
inline constexpr std::size_t min_cluster_secret = 16;

/// Why `secret` cannot protect cluster links and the Redis channel (with how to make a good
/// one), or nothing when it can.
[[nodiscard]] std::optional<std::string> cluster_secret_problem(std::string_view secret);

} // namespace comb::storage
