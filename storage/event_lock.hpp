// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

namespace comb::storage {

class pg_connection;

/// Takes the community's event lock exclusively until the transaction ends. Every event batch
/// holds it shared from before its snapshot to its commit (batch_sql begin_with_snapshot), so a
/// batch either commits before the change that takes this lock, or reads that change and
/// decides by it: a ban, a deletion by id, a room's deletion, a removal from a closed community,
/// a switch to closed, an archive. Throws statement_failed.
void lock_community_events(pg_connection& c, std::int64_t community_id);

/// Takes it shared, as an event batch does, for a write that stores a client's event outside the
/// batches (a room request): a deletion by id or a request to vanish either committed before it
/// and is read, or waits for it and deletes what it stored. Throws statement_failed.
void share_community_events(pg_connection& c, std::int64_t community_id);

} // namespace comb::storage
