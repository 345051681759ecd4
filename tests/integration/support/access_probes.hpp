// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>

#include "storage/pg_connection.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

namespace comb::test {

/// The public key of the test author seeded `seed`.
inline protocol::bytes32 key_of(std::uint8_t seed) {
  return author(seed).pubkey();
}

/// The state version the database holds for `community`.
inline std::int64_t version_of(storage::pg_connection& c, std::int64_t community) {
  return std::stoll(scalar(c, "SELECT state_version FROM communities WHERE id = $1::bigint",
                           {std::to_string(community)}));
}

} // namespace comb::test
