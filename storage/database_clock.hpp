// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>

namespace comb::storage {

class pg_connection;

/// How far the database's clock is ahead of this process's (negative: behind), in ms, taken at
/// the middle of one round trip. Nothing on a database error, or when the round trip took so
/// long (over a second) that the middle says little.
[[nodiscard]] std::optional<std::int64_t> database_clock_offset_ms(pg_connection& connection);

} // namespace comb::storage
