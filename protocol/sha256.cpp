// SPDX-License-Identifier: MIT
#include "protocol/sha256.hpp"

#include <openssl/sha.h>

namespace comb::protocol {

bytes32 sha256(std::string_view data) noexcept {
  bytes32 digest{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  return digest;
}

} // namespace comb::protocol
