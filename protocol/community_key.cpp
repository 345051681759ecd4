// SPDX-License-Identifier: MIT
#include "protocol/community_key.hpp"

#include <string>

#include "protocol/sha256.hpp"

namespace comb::protocol {
namespace {

constexpr std::string_view derivation_label = "comb community signing key v1";

} // namespace

key_pair derive_community_key(const key_pair& relay_key, std::string_view primary_host) {
  // A result at or above the curve order (about 2^-128 likely) takes the next counter.
  for (char counter = 0;; ++counter) {
    std::string message(derivation_label);
    message += '\0';
    message += primary_host;
    message += '\0';
    message += counter;
    if (auto key = key_pair::from_secret(hmac_sha256(relay_key.secret(), message)))
      return *key;
  }
}

} // namespace comb::protocol
