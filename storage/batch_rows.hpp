// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/store_plan.hpp"

namespace comb::storage {

// A batch's inserts are COPYs in binary format: no array literal to escape here and parse
// there, no function scan unnesting columns into rows, and Postgres inserts the rows in bulk
// (one WAL record per heap page rather than per row). Each payload matches its statement's
// column list here.

/// The COPY that event_rows feeds.
inline constexpr const char* event_copy_sql =
  "COPY events (community_id, id, pubkey, created_at, kind, d_tag, expires_at, raw) FROM STDIN (FORMAT binary)";

/// The COPY that tag_rows feeds.
inline constexpr const char* tag_copy_sql =
  "COPY event_tags (community_id, event_id, name, value, created_at, kind, pubkey, expires_at, size, version)"
  " FROM STDIN (FORMAT binary)";

/// The rows of the events at `inserts`, in (community, id) order: two writers or pods inserting
/// the same events then wait on each other's unique-index entries in one order, and never
/// deadlock.
[[nodiscard]] std::string event_rows(std::span<const event_write> writes, const std::vector<std::size_t>& inserts);

/// The tag rows of the planned inserts: each event's indexed tags, and the rooms it borrows
/// (store_outcome::borrowed_rooms: a comment, a report, an addressable edit without its `h`) as
/// rows named `room`, which no filter can name (a filter's tags are one letter). Each carries
/// what a read by tag checks of its event (migration 49), with `transaction` as the event row's
/// version. Nothing when there is no row.
[[nodiscard]] std::optional<std::string> tag_rows(std::span<const event_write> writes, const store_plan& plan,
                                                  std::uint32_t transaction);

} // namespace comb::storage
