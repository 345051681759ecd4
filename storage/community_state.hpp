// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace comb::storage {

class pg_connection;

/// Of `community_ids`, those that are archived or no longer exist (their connections must end).
/// Nothing on a database error: then nobody is closed.
[[nodiscard]] std::optional<std::vector<std::int64_t>>
inactive_communities(pg_connection& connection, const std::vector<std::int64_t>& community_ids);

} // namespace comb::storage
