// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "storage/pg_connection.hpp"
#include "storage/store_plan.hpp"

namespace comb::storage {

// The statements of one store_batch transaction: a handful per batch whatever its size. The
// reads and deletes take whole columns as binary array parameters and unnest them; the events
// and their tags go in by binary COPY. begin_with_snapshot opens the transaction, write_plan
// runs inside it, the caller commits or rolls back; a returned pg_reply is the statement that
// failed.

/// Opens the batch's transaction, takes its advisory locks (in the given, ascending, order) and
/// reads what the database holds for the batch's ids and addresses: three statements in one
/// round trip (a pipeline). The read starts only once the locks are granted, so it sees every
/// batch that held them before. After a failure the caller rolls back. It also reads the
/// transaction's id (batch_snapshot::transaction), the version of the rows the batch inserts.
[[nodiscard]] std::variant<batch_snapshot, pg_reply> begin_with_snapshot(
  pg_connection& connection, const std::vector<lock_request>& locks, const batch_keys& keys);

/// Reads which of `posters` may post in their room (batch_snapshot::room_posters), in the
/// batch's transaction after begin_with_snapshot; a failed read is the caller's to roll back.
[[nodiscard]] std::optional<pg_reply> read_room_posters(pg_connection& connection,
                                                        const std::vector<room_poster>& posters,
                                                        batch_snapshot& snapshot);

/// Writes the plan. An insert that finds its id already stored (a concurrent writer of the same
/// event committed after the snapshot was read) fails with unique_violation (23505): the
/// caller replays the batch, whose snapshot then holds that id. `transaction`: the batch's
/// (batch_snapshot::transaction), which each tag row carries as its event's version.
[[nodiscard]] std::optional<pg_reply> write_plan(pg_connection& connection,
                                                 std::span<const event_write> writes,
                                                 store_plan& plan, std::uint32_t transaction);

} // namespace comb::storage
