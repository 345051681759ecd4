// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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
};

/// The history part of a REQ: one statement returning the `raw` JSON of matching events in
/// `community_id`, newest first (same second: lowest id first), each filter limited by its
/// `limit` (absent: `default_limit`), distinct across filters, unexpired at `now`.
/// Nothing when no filter can return a row (an empty value list, `limit: 0`, since > until,
/// tag values that are never indexed), so the caller need not ask the database.
[[nodiscard]] std::optional<sql_statement> history_sql(std::int64_t community_id,
                                                       const std::vector<protocol::filter>& filters,
                                                       std::int64_t now,
                                                       std::uint32_t default_limit);

/// history_sql's rows as long as their JSON adds up to less than `max_bytes` (the row that
/// reaches it included), each as (raw, upto): `upto` is the bytes of JSON up to and including
/// that row. The reply is whole when its last row's `upto` is below `max_bytes` (or it has
/// none); otherwise rows may be missing and the caller reads history_sql's instead. So a
/// reader may fetch a small reply in one result, never holding more than about `max_bytes`.
[[nodiscard]] std::optional<sql_statement> bounded_history_sql(
  std::int64_t community_id, const std::vector<protocol::filter>& filters, std::int64_t now,
  std::uint32_t default_limit, std::size_t max_bytes);

/// NIP-45: one statement returning a single row with the number of distinct matching events
/// the reader may see (`hiding`: NIP-29 rooms, as a REQ would show them); limits are ignored.
/// Nothing when no filter can match.
[[nodiscard]] std::optional<sql_statement> count_sql(std::int64_t community_id,
                                                     const std::vector<protocol::filter>& filters,
                                                     std::int64_t now,
                                                     const protocol::room_hiding& hiding = {});

} // namespace comb::storage
