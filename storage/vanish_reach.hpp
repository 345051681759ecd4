// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "storage/event_store.hpp"

namespace comb::storage {

class pg_connection;

/// A request to vanish reaching many communities is carried out in transactions of at most this
/// many: each holds its communities' locks until it commits, and Postgres's lock table has room
/// for about 64 per transaction (max_locks_per_transaction).
inline constexpr std::size_t vanish_communities_per_transaction = 32;

/// NIP-62 across the deployment: the communities other than `request`'s own where its author has
/// something a request to vanish takes (events up to its created_at, gift wraps addressed to
/// them), among every community (ALL_RELAYS) or those whose host or alias one of its `relay`
/// tags names. Ascending; nothing when the database could not be read. Where the author has
/// nothing, nothing is done: no line is drawn where nothing could come back, as in the request's
/// own community, so a request costs a probe per community and writes only where it takes.
[[nodiscard]] std::optional<std::vector<std::int64_t>> communities_vanish_reaches(pg_connection& connection,
                                                                                  const event_write& request);

} // namespace comb::storage
