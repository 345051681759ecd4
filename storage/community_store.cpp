// SPDX-License-Identifier: MIT
#include "storage/community_store.hpp"

#include "storage/event_lock.hpp"

#include <exception>
#include <sstream>
#include <stdexcept>

#include "protocol/hex.hpp"
#include "protocol/host.hpp"
#include "storage/access_change.hpp"
#include "storage/community_keys.hpp"
#include "storage/management_store.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"

namespace comb::storage {
namespace {

// A host may be a community's primary host or one of its aliases in community_hosts.
constexpr const char* find_sql =
  "SELECT c.id, c.host, c.access, c.archived_at IS NOT NULL, coalesce(c.name, ''),"
  " c.description, coalesce(c.icon, ''), coalesce((SELECT encode(m.pubkey, 'hex')"
  " FROM members m WHERE m.community_id = c.id AND m.role = 'owner'), '') FROM communities c"
  " WHERE c.host = $1::text OR c.id = (SELECT h.community_id FROM community_hosts h"
  " WHERE h.host = $1::text) ORDER BY c.host = $1::text DESC LIMIT 1";

community_row row_of(const pg_reply& reply, int row = 0) {
  return community_row{reply.integer(row, 0), std::string(reply.text(row, 1)),
                       reply.text(row, 2) == "closed", reply.text(row, 3) == "t", {}};
}

// Aliases travel space-separated: normalized hosts never contain a space.
constexpr const char* list_sql =
  "SELECT c.id, c.host, c.access, c.archived_at IS NOT NULL,"
  " (SELECT count(*) FROM members m WHERE m.community_id = c.id),"
  " COALESCE((SELECT string_agg(h.host, ' ' ORDER BY h.host) FROM community_hosts h"
  " WHERE h.community_id = c.id AND h.host <> c.host), '')"
  " FROM communities c ORDER BY c.host";

std::vector<std::string> split_hosts(std::string_view text) {
  std::vector<std::string> hosts;
  std::istringstream in{std::string(text)};
  for (std::string host; in >> host;)
    hosts.push_back(host);
  return hosts;
}

/// Runs `sql` (a change of one community's rows) in a transaction that also notes the access
/// change (version + notification). The note goes first, so a deleted community's last
/// notification still names it; when `sql` changes nothing, the whole transaction (the note
/// with it) rolls back and the reply says 0 rows. A change that refuses events from its commit
/// on (an archive) takes the community's event lock too (`lock_events`). On failure `error` is
/// set.
pg_reply change_with_note(pg_connection& connection, std::string& error, const char* sql,
                          const pg_params& params, std::int64_t id,
                          const std::optional<protocol::bytes32>& manager = std::nullopt,
                          lifecycle_result* refused = nullptr, bool lock_events = false) {
  // On failure `error` is set and the reply is empty.
  auto failed = [&](const std::string& why) {
    error = why;
    (void)connection.exec("ROLLBACK");
    return pg_reply{};
  };
  if (auto begin = connection.exec("BEGIN"); !begin.ok())
    return failed(begin.error());
  // The row lock first, as membership writers take it.
  auto locked = connection.exec("SELECT archived_at IS NOT NULL FROM communities"
                                " WHERE id = $1::bigint FOR NO KEY UPDATE",
                                {std::to_string(id)});
  if (!locked.ok())
    return failed(locked.error());
  if (manager) {
    // A manager changes nothing of an archived community (the operator may); the row decides.
    const bool archived = locked.rows() > 0 && locked.text(0, 0) == std::string_view("t");
    auto manages = archived ? std::optional(true) : is_manager(connection, id, *manager);
    if (!manages)
      return failed("could not read the caller's role");
    if (archived || !*manages) {
      (void)connection.exec("ROLLBACK");
      if (refused)
        *refused = archived ? lifecycle_result::archived : lifecycle_result::forbidden;
      return pg_reply{};
    }
  }
  if (lock_events) {
    try {
      lock_community_events(connection, id);
    } catch (const std::exception& e) {
      return failed(e.what());
    }
  }
  std::string note_error;
  (void)note_access_change(connection, id, {}, note_error);
  if (!note_error.empty())
    return failed(note_error);
  auto reply = connection.exec(sql, params);
  if (!reply.ok())
    return failed(reply.error());
  if (reply.affected_rows() == 0) {
    (void)connection.exec("ROLLBACK");
    return reply;
  }
  if (auto commit = connection.exec("COMMIT"); !commit.ok())
    return failed(commit.error());
  return reply;
}

/// An UPDATE/DELETE of one community by id: `changed` when it touched the row, otherwise
/// `unchanged` or `not_found` depending on whether the community exists.
lifecycle_result update_result(pg_connection& connection, std::string& error, const char* sql,
                               const pg_params& params, std::int64_t id,
                               const std::optional<protocol::bytes32>& manager = std::nullopt,
                               bool lock_events = false) {
  auto refused = lifecycle_result::changed;
  auto reply = change_with_note(connection, error, sql, params, id, manager, &refused, lock_events);
  if (!error.empty())
    return lifecycle_result::failed;
  if (refused != lifecycle_result::changed)
    return refused;
  if (reply.affected_rows() > 0)
    return lifecycle_result::changed;
  auto exists = connection.exec("SELECT 1 FROM communities WHERE id = $1::bigint",
                                {std::to_string(id)});
  if (!exists.ok()) {
    error = exists.error();
    return lifecycle_result::failed;
  }
  return exists.rows() > 0 ? lifecycle_result::unchanged : lifecycle_result::not_found;
}

/// Everyone in a room of the community who is not one of its members.
std::vector<protocol::bytes32> room_outsiders(pg_connection& tx, std::int64_t id) {
  auto reply = must(tx.exec("SELECT DISTINCT encode(r.pubkey, 'hex') FROM room_members r"
                            " WHERE r.community_id = $1::bigint AND NOT EXISTS (SELECT 1 FROM members m"
                            " WHERE m.community_id = r.community_id AND m.pubkey = r.pubkey)"
                            " ORDER BY 1",
                            {std::to_string(id)}),
                    "find room members who are not community members");
  std::vector<protocol::bytes32> out;
  for (int row = 0; row < reply.rows(); ++row)
    out.push_back(protocol::array_from_hex<32>(reply.text(row, 0)).value_or(protocol::bytes32{}));
  return out;
}

/// The access switch inside its transaction, under the community row lock (as membership and
/// room writers take it, so nobody joins a room in between). Closing also removes every
/// non-member from the community's rooms: in a closed community only its members are in rooms.
/// `changed` is the only result to commit. Throws std::runtime_error on a database error.
access_switch switch_access_locked(pg_connection& tx, std::int64_t id, bool closed,
                                   const protocol::key_pair& relay_key, std::int64_t now) {
  const std::string community = std::to_string(id);
  access_switch out{lifecycle_result::changed, {}, 0};
  if (must(tx.exec("SELECT 1 FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE", {community}),
           "lock community")
        .rows()
      == 0)
    return access_switch{lifecycle_result::not_found, {}, 0};
  // Closing refuses non-members' events from its commit on: a batch that read the community
  // open commits before it.
  if (closed)
    lock_community_events(tx, id);
  const std::string access = closed ? "closed" : "open";
  if (must(tx.exec("UPDATE communities SET access = $2::text WHERE id = $1::bigint"
                   " AND access <> $2::text",
                   {community, access}),
           "set access")
        .affected_rows()
      == 0)
    return access_switch{lifecycle_result::unchanged, {}, 0};
  if (closed) {
    out.room_events = remove_from_rooms(tx, read_community_key(tx, relay_key, id), id,
                                        room_outsiders(tx, id), now, out.retry_at);
    if (out.retry_at != 0) // a room's state is already ahead of this second: nothing is written
      return access_switch{lifecycle_result::unchanged, {}, out.retry_at};
  }
  std::vector<protocol::bytes32> written;
  for (const auto& ev : out.room_events)
    written.push_back(ev.ev.id);
  std::string error;
  if (!note_access_change(tx, id, written, error))
    throw std::runtime_error(error.empty() ? "community vanished" : error);
  return out;
}

} // namespace

community_store::community_store(pg_connection& connection) : connection_(connection) {}

std::optional<community_row> community_store::find_by_host(const std::string& host) {
  try {
    last_error_.clear();
    auto normalized = protocol::normalize_host(host);
    if (!normalized)
      return std::nullopt;
    auto reply = connection_.exec(find_sql, {*normalized});
    if (!reply.ok() && reply.connection_lost())
      reply = connection_.exec(find_sql, {*normalized}); // a read: once more, reconnected
    if (!reply.ok()) {
      last_error_ = reply.error();
      return std::nullopt;
    }
    if (reply.rows() == 0)
      return std::nullopt;
    auto row = row_of(reply);
    std::optional<std::string> description;
    if (!reply.is_null(0, 5))
      description = std::string(reply.text(0, 5));
    row.info = community_info{std::string(reply.text(0, 4)), std::move(description),
                              std::string(reply.text(0, 6)), std::string(reply.text(0, 7))};
    return row;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

std::optional<community_row> community_store::ensure(const std::string& host,
                                                     const std::vector<std::string>& aliases,
                                                     bool closed) {
  try {
    last_error_.clear();
    auto primary = protocol::normalize_host(host);
    if (!primary) {
      last_error_ = "not a valid host: " + host;
      return std::nullopt;
    }
    pg_array hosts;
    hosts.add_text(*primary);
    for (const auto& alias : aliases)
      if (auto normalized = protocol::normalize_host(alias))
        hosts.add_text(*normalized);
    const std::string access = closed ? "closed" : "open";
    auto community = ensure_row(*primary, access);
    if (!community)
      return std::nullopt;
    // Aliases another community already holds stay with it (ON CONFLICT DO NOTHING).
    auto linked = connection_.exec(
      "INSERT INTO community_hosts (host, community_id)"
      " SELECT h, $2::bigint FROM unnest($1::text[]) AS h ON CONFLICT (host) DO NOTHING",
      {hosts.str(), std::to_string(community->id)});
    if (!linked.ok()) {
      last_error_ = linked.error();
      return std::nullopt;
    }
    return community;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

std::optional<community_row> community_store::ensure_row(const std::string& primary,
                                                         const std::string& access) {
  // A host already registered as another community's alias means that community. Its
  // access stays as the database has it: the setting applies only when a community is created.
  if (auto existing = find_by_host(primary))
    return existing;
  if (!last_error_.empty())
    return std::nullopt;
  // Several pods may get here at once: the unique host makes exactly one insert win, and the
  // others read the same row (the no-op update only makes RETURNING answer; access is kept).
  auto reply = connection_.exec(
    "INSERT INTO communities (host, access) VALUES ($1::text, $2::text)"
    " ON CONFLICT (host) DO UPDATE SET host = EXCLUDED.host"
    " RETURNING id, host, access, archived_at IS NOT NULL",
    {primary, access});
  if (!reply.ok() || reply.rows() != 1) {
    last_error_ = reply.ok() ? "no community row returned" : reply.error();
    return std::nullopt;
  }
  return row_of(reply);
}

lifecycle_result community_store::set_archived(std::int64_t id, bool archived) {
  last_error_.clear();
  // Archiving twice keeps the first archive time: the row is touched only on a change.
  return update_result(connection_, last_error_,
                       "UPDATE communities SET archived_at = CASE WHEN $2::boolean THEN now() END"
                       " WHERE id = $1::bigint AND (archived_at IS NOT NULL) <> $2::boolean",
                       {std::to_string(id), archived ? "true" : "false"}, id, std::nullopt, archived);
}

lifecycle_result community_store::remove(std::int64_t id) {
  last_error_.clear();
  auto result = update_result(connection_, last_error_,
                              "DELETE FROM communities WHERE id = $1::bigint",
                              {std::to_string(id)}, id);
  return result == lifecycle_result::unchanged ? lifecycle_result::not_found : result;
}

lifecycle_result community_store::add_host(std::int64_t id, const std::string& host) {
  last_error_.clear();
  auto normalized = protocol::normalize_host(host);
  if (!normalized) {
    last_error_ = "not a valid host: " + host;
    return lifecycle_result::failed;
  }
  // A primary host need not be listed in community_hosts, so both tables are checked.
  auto reply = change_with_note(
    connection_, last_error_,
    "INSERT INTO community_hosts (host, community_id) SELECT $2::text, id FROM communities"
    " WHERE id = $1::bigint AND NOT EXISTS (SELECT 1 FROM communities WHERE host = $2::text)"
    " ON CONFLICT (host) DO NOTHING",
    {std::to_string(id), *normalized}, id);
  if (!last_error_.empty())
    return lifecycle_result::failed;
  if (reply.affected_rows() > 0)
    return lifecycle_result::changed;
  auto exists = connection_.exec("SELECT 1 FROM communities WHERE id = $1::bigint",
                                 {std::to_string(id)});
  if (!exists.ok()) {
    last_error_ = exists.error();
    return lifecycle_result::failed;
  }
  return exists.rows() > 0 ? lifecycle_result::host_exists : lifecycle_result::not_found;
}

access_switch community_store::set_access(std::int64_t id, bool closed,
                                          const protocol::key_pair& relay_key, std::int64_t now) {
  last_error_.clear();
  access_switch out;
  try {
    must(connection_.exec("BEGIN"), "begin");
    out = switch_access_locked(connection_, id, closed, relay_key, now);
    must(connection_.exec(out.result == lifecycle_result::changed ? "COMMIT" : "ROLLBACK"),
         "end transaction");
    return out;
  } catch (const std::exception& e) {
    (void)connection_.exec("ROLLBACK");
    last_error_ = e.what();
    return access_switch{lifecycle_result::failed, {}, 0};
  }
}

lifecycle_result community_store::set_info(std::int64_t id, const community_info_update& update) {
  last_error_.clear();
  // An unset field keeps its value; "" stores NULL for the name and the icon, which NIP-11
  // then defaults or leaves out, and an empty description, shown as it is.
  return update_result(
    connection_, last_error_,
    "UPDATE communities SET"
    " name = CASE WHEN $2::text IS NULL THEN name ELSE nullif($2::text, '') END,"
    " description = CASE WHEN $3::text IS NULL THEN description ELSE $3::text END,"
    " icon = CASE WHEN $4::text IS NULL THEN icon ELSE nullif($4::text, '') END"
    " WHERE id = $1::bigint AND (($2::text IS NOT NULL AND name IS DISTINCT FROM nullif($2::text, ''))"
    " OR ($3::text IS NOT NULL AND description IS DISTINCT FROM $3::text)"
    " OR ($4::text IS NOT NULL AND icon IS DISTINCT FROM nullif($4::text, '')))",
    {std::to_string(id), update.name, update.description, update.icon}, id, update.requested_by);
}

std::optional<std::vector<community_summary>> community_store::list_all() {
  try {
    last_error_.clear();
    auto reply = connection_.exec(list_sql);
    if (!reply.ok()) {
      last_error_ = reply.error();
      return std::nullopt;
    }
    std::vector<community_summary> out;
    for (int row = 0; row < reply.rows(); ++row)
      out.push_back({row_of(reply, row), reply.integer(row, 4), split_hosts(reply.text(row, 5))});
    return out;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

} // namespace comb::storage
