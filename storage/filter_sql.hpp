// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/filter.hpp"
#include "protocol/room_rules.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {

/// SQL text with $n placeholders and the values that go with them. No value is ever part of
/// the text.
struct sql_statement {
  std::string text;
  pg_params params;
  /// Its plan is fixed by the text's shape, whatever the values: worth planning only once.
  bool fixed_plan = false;
  /// As pg_formats: parameters sent in binary form, and rows read in binary form.
  std::vector<bool> binary_params = {};
  bool binary_rows = false;
};

/// Rows several filters of one REQ may ask for together: past it each filter's limit is scaled
/// down (every page of such a reply reads the filters' whole union again).
inline constexpr std::uint64_t max_union_rows = 10000;

/// The history part of a REQ: one statement returning the `raw` JSON of matching events in
/// `community_id`, newest first (same second: lowest id first), each filter limited by its
/// `limit` (absent: `default_limit`; several filters together at most `max_union_rows`),
/// distinct across filters, unexpired at `now`.
/// Nothing when no filter can return a row (an empty value list, `limit: 0`, since > until,
/// tag values that are never indexed), so the caller need not ask the database.
[[nodiscard]] std::optional<sql_statement> history_sql(std::int64_t community_id,
                                                       const std::vector<protocol::filter>& filters,
                                                       std::int64_t now,
                                                       std::uint32_t default_limit);

/// Where a paged history read goes on from: after the row at (`created_at`, `id`), the last
/// one sent, newest first; `sent` rows of the reply went before it.
struct history_cursor {
  std::int64_t created_at = 0;
  std::string id; ///< bytea in Postgres' text form ("\\x0a1b..."), as a read returned it
  std::uint32_t sent = 0;
};

/// One page of a history reply: where it starts (nothing: at the newest row) and at most how
/// many rows it reads (0: no bound but the byte bound).
struct history_page {
  std::optional<history_cursor> after;
  std::uint32_t max_rows = 0;
};

/// The community's state version ($1), as a column of a statement's rows: read in their snapshot.
inline constexpr std::string_view state_version_read =
  "(SELECT state_version FROM communities WHERE id = $1::bigint)";

/// history_sql's rows as long as their JSON adds up to less than `max_bytes` (the row that
/// reaches it included), each as (raw, upto, created_at, id): `upto` is the bytes of JSON up to
/// and including that row (then the community's state version in the same snapshot,
/// state_version_read); `created_at` and `id`, its place in the reply's order (the cursor of
/// the next page), are NULL except on a row the reply may go on after: the one that reaches
/// `max_bytes`, or the last a LIMIT allowed (the filter's, or `page.max_rows`). The reply is
/// whole when its last row has no place (or there is no row); otherwise the next page goes on
/// after that row. Pages come from separate statements, each its own snapshot: a row committed between two
/// pages is in the later one if it sorts after the cursor (a live subscription, registered
/// before the first page, delivers the others). So a reader fetches a reply page by page, each
/// in one result, never holding more than about `max_bytes`. Nothing when no filter can return
/// a row, or when the page's cursor has used up the one filter's limit.
/// `hiding`: what of the rooms the reader may not see, of which these statements leave out the
/// comments and reports (protocol::room_referents; the other rows the reader checks as it sends them).
[[nodiscard]] std::optional<sql_statement> bounded_history_sql(
  std::int64_t community_id, const std::vector<protocol::filter>& filters, std::int64_t now,
  std::uint32_t default_limit, std::size_t max_bytes, const history_page& page = {},
  const protocol::room_hiding& hiding = {});

/// bounded_history_sql's rows without their JSON, for a reader that holds bodies already
/// (event_body_cache): the same rows, order, limits and byte bound, each as (id, v, upto,
/// created_at, state version): `id` (bytea) and `v` (the row version, `xmin`) name the body;
/// `upto` (as above) and `created_at` are NULL except on a row the reply may go on after,
/// whose place is then (`created_at`, `id`). Each row is about a tenth of its JSON.
[[nodiscard]] std::optional<sql_statement> bounded_history_keys_sql(
  std::int64_t community_id, const std::vector<protocol::filter>& filters, std::int64_t now,
  std::uint32_t default_limit, std::size_t max_bytes, const history_page& page = {},
  const protocol::room_hiding& hiding = {});

/// The stored JSON of `ids` in `community_id`, as rows of (id, v, raw) in no order; ids not
/// stored (any more) have no row. Nothing for no ids. Both ways in binary form: the ids go as
/// a binary bytea[] and the rows come in binary format.
/// bounded_history_sql and bounded_history_keys_sql ask for binary rows too: their numbers
/// are big-endian integers (pg_reply::binary_integer) and `id` its 32 bytes.
[[nodiscard]] std::optional<sql_statement> event_bodies_sql(std::int64_t community_id,
                                                            const std::vector<protocol::bytes32>& ids);

/// Events a COUNT reads at most: past it the answer is this many, marked approximate (NIP-45),
/// so `["COUNT","c",{}]` on a community of millions reads no more than a large REQ does.
inline constexpr std::uint64_t max_counted_events = 10000;

/// NIP-45: one statement returning a single row with the number of distinct matching events
/// the reader may see (`hiding`: NIP-29 rooms, as a REQ would show them), the community's state
/// version it was counted at, and whether a filter's share of the bound was filled (the count
/// is then a lower bound); limits are ignored. It reads `counted_at_most` + 1 rows at most,
/// shared among the filters. Nothing when no filter can match.
[[nodiscard]] std::optional<sql_statement> count_sql(std::int64_t community_id,
                                                     const std::vector<protocol::filter>& filters,
                                                     std::int64_t now,
                                                     const protocol::room_hiding& hiding = {},
                                                     std::uint64_t counted_at_most = max_counted_events);

} // namespace comb::storage
