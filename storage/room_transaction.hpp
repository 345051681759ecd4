// SPDX-License-Identifier: MIT
#pragma once

// What the room store's write paths share inside their transactions (room_store.cpp applies
// requests, room_restore.cpp restores rooms and removes members from them). Not a public API.

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "protocol/room_rules.hpp"
#include "storage/event_rows.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {

/// The room's newest state already has this second.
struct room_must_wait {
  std::int64_t until = 0;
};

/// Runs `locked` in one transaction. A room_must_wait becomes `waiting` with its retry time; any
/// other failure rolls back and becomes the outcome's error (also in `failure` when given).
template <typename Outcome, typename Locked>
Outcome in_transaction(pg_connection& connection, const char* waiting, Locked&& locked,
                       std::string* failure = nullptr) {
  try {
    must(connection.exec("BEGIN"), "begin");
    Outcome out = locked();
    must(connection.exec("COMMIT"), "commit");
    return out;
  } catch (const room_must_wait& wait) {
    (void)connection.exec("ROLLBACK");
    Outcome out;
    out.error = waiting;
    out.retry_at = wait.until;
    return out;
  } catch (const std::exception& e) {
    (void)connection.exec("ROLLBACK");
    Outcome out;
    out.error = e.what();
    if (failure)
      *failure = out.error;
    return out;
  }
}

/// Whether the statement returns a row; throws statement_failed.
[[nodiscard]] inline bool row_exists(pg_connection& c, const char* sql,
                                     std::vector<std::optional<std::string>> params, const char* step) {
  return must(c.exec(sql, params), step).rows() > 0;
}

/// The statement's one integer (a count); throws statement_failed.
[[nodiscard]] inline std::int64_t row_count(pg_connection& c, const char* sql,
                                            std::vector<std::optional<std::string>> params,
                                            const char* step) {
  return must(c.exec(sql, params), step).integer(0, 0);
}

/// Notes the access change of the transaction that wrote `events`; its new state version.
/// Throws statement_failed.
[[nodiscard]] std::int64_t noted_change(pg_connection& c, std::int64_t community_id,
                                        const std::vector<relay_signed_event>& events);

/// Stores an event with its indexed tags (a room request itself, a relay-signed event); an
/// event stored already is left alone. Throws statement_failed.
void insert_event(pg_connection& c, std::int64_t community_id, const relay_signed_event& stored);

/// The second the room's newest relay-signed state has (0: none yet).
[[nodiscard]] std::int64_t room_clock(pg_connection& c, std::int64_t community_id, const std::string& room);

/// Signs, retires and stores the relay-signed events of `parts`, at one paced second.
std::vector<relay_signed_event> write_state(pg_connection& c, const protocol::key_pair& relay,
                                            std::int64_t community_id, const protocol::room_state& room,
                                            const protocol::room_parts& parts,
                                            std::int64_t created_at);

} // namespace comb::storage
