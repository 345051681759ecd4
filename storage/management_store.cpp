// SPDX-License-Identifier: MIT
#include "storage/management_store.hpp"

#include "protocol/kind_rules.hpp"
#include "storage/access_change.hpp"
#include "storage/event_lock.hpp"
#include "storage/event_rows.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

std::optional<std::vector<ban_entry>> read_entries(pg_connection& c, const char* sql,
                                                   std::int64_t community_id) {
  auto reply = c.exec(sql, {std::to_string(community_id)});
  if (!reply.ok())
    return std::nullopt;
  std::vector<ban_entry> out;
  out.reserve(static_cast<std::size_t>(reply.rows()));
  for (int row = 0; row < reply.rows(); ++row)
    out.push_back({protocol::array_from_hex<32>(reply.text(row, 0)).value_or(protocol::bytes32{}),
                   std::string(reply.text(row, 1))});
  return out;
}

} // namespace

std::optional<community_bans> load_bans(pg_connection& connection, std::int64_t community_id) {
  auto pubkeys = read_entries(connection,
                              "SELECT encode(pubkey, 'hex'), reason FROM banned_pubkeys"
                              " WHERE community_id = $1::bigint ORDER BY created_at, pubkey",
                              community_id);
  auto events = read_entries(connection,
                             "SELECT encode(event_id, 'hex'), reason FROM banned_events"
                             " WHERE community_id = $1::bigint ORDER BY created_at, event_id",
                             community_id);
  if (!pubkeys || !events)
    return std::nullopt;
  return community_bans{std::move(*pubkeys), std::move(*events)};
}

std::optional<bool> is_manager(pg_connection& connection, std::int64_t community_id,
                                  const protocol::bytes32& pubkey) {
  auto reply = connection.exec("SELECT 1 FROM members WHERE community_id = $1::bigint"
                               " AND pubkey = $2::bytea AND role IN ('owner', 'admin')",
                               {std::to_string(community_id), bytea_param(pubkey)});
  if (!reply.ok())
    return std::nullopt;
  return reply.rows() > 0;
}

management_store::management_store(pg_connection& connection, const protocol::key_pair& relay_key)
  : connection_(connection), keys_(relay_key) {}

std::optional<bool> management_store::spend_http_auth(const protocol::bytes32& event_id,
                                                      std::int64_t expires_at, std::int64_t now) {
  last_error_.clear();
  // Rows past their time can never be replayed (the time check refuses them first) on a pod
  // whose clock is at most a minute behind this one's: kept that much longer.
  constexpr std::int64_t clock_skew_margin = 60;
  // Never past the database's clock either: a pod whose clock jumped ahead would reopen every
  // pod's replay window.
  auto purged = connection_.exec("DELETE FROM used_http_auth"
                                 " WHERE expires_at < LEAST($1::bigint, extract(epoch FROM now())::bigint) - $2::bigint",
                                 {std::to_string(now), std::to_string(clock_skew_margin)});
  auto spent = purged.ok() ? connection_.exec("INSERT INTO used_http_auth (event_id, expires_at)"
                                              " VALUES ($1::bytea, $2::bigint) ON CONFLICT DO NOTHING",
                                              {bytea_param(event_id), std::to_string(expires_at)})
                           : std::move(purged);
  if (!spent.ok()) {
    last_error_ = spent.error();
    return std::nullopt;
  }
  return spent.affected_rows() == 1;
}

std::optional<bool> management_store::pubkey_bans_full(std::int64_t community_id) {
  last_error_.clear();
  auto reply = connection_.exec("SELECT count(*) >= $2::bigint FROM (SELECT 1 FROM banned_pubkeys"
                                " WHERE community_id = $1::bigint LIMIT $2::bigint) AS b",
                                {std::to_string(community_id), std::to_string(max_banned_pubkeys)});
  if (!reply.ok()) {
    last_error_ = reply.error();
    return std::nullopt;
  }
  return reply.text(0, 0) == std::string_view("t");
}

management_result management_store::lock_for(std::int64_t community_id,
                                             const std::optional<protocol::bytes32>& manager) {
  // The community row first, as membership writers take it (their ban batches take the event
  // lock after it): the same order everywhere, so the two never deadlock; and a change of roles
  // holds it, so the role read after it is the one that stands.
  auto row = connection_.exec("SELECT state_version, archived_at IS NOT NULL FROM communities"
                              " WHERE id = $1::bigint FOR NO KEY UPDATE",
                              {std::to_string(community_id)});
  if (!row.ok()) {
    last_error_ = row.error();
    return management_result::failed;
  }
  // What an unchanged result holds at: every change bumps the version under this lock.
  if (row.rows() > 0)
    last_version_ = row.integer(0, 0);
  if (!manager)
    return management_result::changed;
  // The row decides, not the host lookup that let the call in (a pod's, a moment old).
  if (row.rows() > 0 && row.text(0, 1) == std::string_view("t"))
    return management_result::archived;
  auto manages = is_manager(connection_, community_id, *manager);
  if (!manages) {
    last_error_ = "could not read the caller's role";
    return management_result::failed;
  }
  return *manages ? management_result::changed : management_result::forbidden;
}

/// The relay's own events (the live list, its deltas, room state, the 9000/9001/9008 it issues
/// for rooms) are never banned: deleting the list would break "the newest list names exactly the
/// members", and a room's deletion must stay newer than its state. Only the relay stores the
/// relay-signed kinds, whichever key signed them; the others are its own by their key.
/// Nothing on a database error (last_error).
std::optional<bool> management_store::relays_own(std::int64_t community_id, const pg_reply& stored) {
  if (protocol::relay_signed_kind(static_cast<std::uint32_t>(stored.integer(0, 0))))
    return true;
  auto pubkey = protocol::array_from_hex<32>(stored.text(0, 1));
  return pubkey ? signs_for(community_id, *pubkey) : std::optional(false);
}

std::optional<bool> management_store::signs_for(std::int64_t community_id, const protocol::bytes32& pubkey) {
  try {
    return keys_.own_keys(connection_, community_id).contains(pubkey);
  } catch (const statement_failed& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

management_result management_store::ban_event(std::int64_t community_id,
                                              const protocol::bytes32& event_id,
                                              const std::string& reason,
                                              const protocol::bytes32& banned_by,
                                              std::optional<protocol::bytes32> manager) {
  last_error_.clear();
  last_version_ = 0;
  auto begin = connection_.exec("BEGIN");
  if (!begin.ok()) {
    last_error_ = begin.error();
    return management_result::failed;
  }
  auto result = ban_event_locked(community_id, event_id, reason, banned_by, manager);
  bool keep = result == management_result::changed || result == management_result::unchanged;
  auto end = connection_.exec(keep ? "COMMIT" : "ROLLBACK");
  if (!end.ok() && result != management_result::failed) {
    last_error_ = end.error();
    return management_result::failed;
  }
  return result;
}

management_result management_store::ban_event_locked(std::int64_t community_id,
                                                     const protocol::bytes32& event_id,
                                                     const std::string& reason,
                                                     const protocol::bytes32& banned_by,
                                                     const std::optional<protocol::bytes32>& manager) {
  const std::string community = std::to_string(community_id);
  if (auto row = lock_for(community_id, manager); row != management_result::changed)
    return row;
  // Exclusive, as a NIP-09 deletion by id takes it: event inserts hold it shared, so each one
  // either committed before (and is deleted here) or reads the ban after.
  try {
    lock_community_events(connection_, community_id);
  } catch (const statement_failed& e) {
    last_error_ = e.what();
    return management_result::failed;
  }
  auto stored = connection_.exec("SELECT kind, encode(pubkey, 'hex') FROM events"
                                 " WHERE community_id = $1::bigint AND id = $2::bytea",
                                 {community, bytea_param(event_id)});
  if (!stored.ok()) {
    last_error_ = stored.error();
    return management_result::failed;
  }
  auto own = stored.rows() > 0 ? relays_own(community_id, stored) : std::optional(false);
  if (!own)
    return management_result::failed;
  if (*own)
    return management_result::refused;
  if (stored.rows() > 0 && manager) {
    auto author = protocol::array_from_hex<32>(stored.text(0, 1));
    if (auto may = author ? admin_may_ban(community_id, *author, *manager) : management_result::changed;
        may != management_result::changed)
      return may;
  }
  auto full = connection_.exec("SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM banned_events"
                               " WHERE community_id = $1::bigint AND event_id = $2::bytea)"
                               " AND (SELECT count(*) FROM banned_events WHERE community_id = $1::bigint)"
                               " >= $3::bigint",
                               {community, bytea_param(event_id), std::to_string(max_banned_events)});
  if (!full.ok()) {
    last_error_ = full.error();
    return management_result::failed;
  }
  if (full.rows() > 0)
    return management_result::full;
  auto deleted = connection_.exec("DELETE FROM events WHERE community_id = $1::bigint"
                                  " AND id = $2::bytea",
                                  {community, bytea_param(event_id)});
  auto banned = deleted.ok()
                  // The owner banning again takes an admin's ban over, so no admin lifts it.
                  ? connection_.exec("INSERT INTO banned_events (community_id, event_id, reason,"
                                     " banned_by) VALUES ($1::bigint, $2::bytea, $3::text, $4::bytea)"
                                     " ON CONFLICT (community_id, event_id) DO UPDATE SET"
                                     " banned_by = EXCLUDED.banned_by, reason = CASE WHEN"
                                     " EXCLUDED.reason = '' THEN banned_events.reason ELSE"
                                     " EXCLUDED.reason END"
                                     " WHERE banned_events.banned_by IS NOT NULL"
                                     " AND banned_events.banned_by <> EXCLUDED.banned_by"
                                     " AND EXCLUDED.banned_by IN (SELECT pubkey FROM members"
                                     " WHERE community_id = $1::bigint AND role = 'owner')",
                                     {community, bytea_param(event_id), reason,
                                      bytea_param(banned_by)})
                  : std::move(deleted);
  if (!banned.ok()) {
    last_error_ = banned.error();
    return management_result::failed;
  }
  if (banned.affected_rows() == 0 && deleted.affected_rows() == 0)
    return management_result::unchanged;
  return noted(community_id) ? management_result::changed : management_result::failed;
}

bool management_store::noted(std::int64_t community_id) {
  // Every pod reloads the community's bans when it hears of the new version.
  if (auto version = note_access_change(connection_, community_id, {}, last_error_)) {
    last_version_ = *version;
    return true;
  }
  if (last_error_.empty())
    last_error_ = "the community no longer exists";
  return false;
}

/// An admin lifts no ban the owner or the operator (no `banned_by`) made, as for pubkey bans:
/// `changed` when `manager` may lift the event's ban (or there is none), `owner_held` when not.
/// Read under the community row lock (lock_for), which every change of roles takes.
management_result management_store::admin_may_lift(std::int64_t community_id,
                                                   const protocol::bytes32& event_id,
                                                   const protocol::bytes32& manager) {
  auto held = connection_.exec(
    "SELECT 1 FROM banned_events b WHERE b.community_id = $1::bigint AND b.event_id = $2::bytea"
    " AND (b.banned_by IS NULL OR b.banned_by IN (SELECT pubkey FROM members"
    " WHERE community_id = $1::bigint AND role = 'owner'))"
    " AND NOT EXISTS (SELECT 1 FROM members WHERE community_id = $1::bigint"
    " AND pubkey = $3::bytea AND role = 'owner')",
    {std::to_string(community_id), bytea_param(event_id), bytea_param(manager)});
  if (!held.ok()) {
    last_error_ = held.error();
    return management_result::failed;
  }
  return held.rows() > 0 ? management_result::owner_held : management_result::changed;
}

/// An admin bans no event of the owner's, as nobody bans the owner: `changed` when `manager`
/// may ban an event `author` wrote, `owner_held` when not. Read under the community row lock.
management_result management_store::admin_may_ban(std::int64_t community_id,
                                                  const protocol::bytes32& author,
                                                  const protocol::bytes32& manager) {
  if (author == manager)
    return management_result::changed;
  auto owner = connection_.exec("SELECT 1 FROM members WHERE community_id = $1::bigint"
                                " AND pubkey = $2::bytea AND role = 'owner'",
                                {std::to_string(community_id), bytea_param(author)});
  if (!owner.ok()) {
    last_error_ = owner.error();
    return management_result::failed;
  }
  return owner.rows() > 0 ? management_result::owner_held : management_result::changed;
}

management_result management_store::allow_event(std::int64_t community_id,
                                                const protocol::bytes32& event_id,
                                                std::optional<protocol::bytes32> manager) {
  last_error_.clear();
  last_version_ = 0;
  if (auto begin = connection_.exec("BEGIN"); !begin.ok()) {
    last_error_ = begin.error();
    return management_result::failed;
  }
  auto result = lock_for(community_id, manager);
  if (result == management_result::changed && manager)
    result = admin_may_lift(community_id, event_id, *manager);
  if (result == management_result::changed) {
    auto reply = connection_.exec("DELETE FROM banned_events WHERE community_id = $1::bigint"
                                  " AND event_id = $2::bytea",
                                  {std::to_string(community_id), bytea_param(event_id)});
    result = !reply.ok()                  ? management_result::failed
             : reply.affected_rows() == 0 ? management_result::unchanged
             : noted(community_id)        ? management_result::changed
                                          : management_result::failed;
    if (!reply.ok())
      last_error_ = reply.error();
  }
  const bool keep = result == management_result::changed || result == management_result::unchanged;
  auto end = connection_.exec(keep ? "COMMIT" : "ROLLBACK");
  if (!end.ok() && keep) {
    last_error_ = end.error();
    return management_result::failed;
  }
  return result;
}

} // namespace comb::storage
