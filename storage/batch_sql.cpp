// SPDX-License-Identifier: MIT
#include "storage/batch_sql.hpp"

#include <algorithm>

#include "protocol/hex.hpp"
#include "protocol/nip62.hpp"
#include "storage/batch_rows.hpp"
#include "storage/pg_array.hpp"

namespace comb::storage {
namespace {

// -- binary parameters ------------------------------------------------------------

// Every array parameter of these statements is sent in binary (pg_binary_array): no hex for the
// ids and no literal for Postgres to parse and unescape.
using pg_type = pg_binary_array::element;

pg_reply exec_binary(pg_connection& connection, std::string_view sql, const pg_params& params) {
  return connection.exec(sql, params, std::vector<bool>(params.size(), true));
}

// -- reading rows -------------------------------------------------------------

protocol::bytes32 bytes32_field(const pg_reply& reply, int row, int column) {
  std::string_view text = reply.text(row, column); // bytea in hex output form: \x....
  protocol::bytes32 out{};
  if (text.size() == 2 + 64)
    (void)protocol::decode_lower_hex(text.substr(2), out);
  return out;
}

// -- array parameters -----------------------------------------------------------

pg_params id_columns(const std::vector<event_key>& ids) {
  pg_binary_array communities(pg_type::int8);
  pg_binary_array event_ids(pg_type::bytea);
  for (const auto& key : ids) {
    communities.add_integer(key.community_id);
    event_ids.add_bytes(key.id);
  }
  return {communities.str(), event_ids.str()};
}

pg_params room_columns(const std::vector<std::pair<std::int64_t, std::string>>& rooms) {
  pg_binary_array communities(pg_type::int8);
  pg_binary_array ids(pg_type::text);
  for (const auto& [community, room] : rooms) {
    communities.add_integer(community);
    ids.add_bytes(std::string_view(room));
  }
  return {communities.str(), ids.str()};
}

pg_params address_columns(const std::vector<address>& addresses) {
  pg_binary_array communities(pg_type::int8);
  pg_binary_array pubkeys(pg_type::bytea);
  pg_binary_array kinds(pg_type::int4);
  pg_binary_array d_tags(pg_type::text);
  for (const auto& a : addresses) {
    communities.add_integer(a.community_id);
    pubkeys.add_bytes(a.pubkey);
    kinds.add_integer(a.kind);
    d_tags.add_bytes(std::string_view(a.d_key));
  }
  return {communities.str(), pubkeys.str(), kinds.str(), d_tags.str()};
}

// -- reads ----------------------------------------------------------------------

// The snapshot is one statement: each part of it (events by id and by address, NIP-09 marks,
// NIP-86 bans, the communities) was a statement of its own, and every statement costs Postgres
// an executor start-up and both sides a round trip, whatever its rows; the parts for addresses
// are left out of a batch that has none. Each part probes its table once per key through a
// LATERAL subquery (OFFSET 0 keeps it one): a plain join with the unnested keys was planned as
// a hash join over a sequential scan of the whole table while `events` was new and unanalyzed,
// and as a prepared statement's generic plan that plan stayed, reading every stored event for
// every batch until autovacuum analyzed the table. Each row says what it is in its first column;
// then community_id, id, pubkey, kind, created_at (deleted_at for 'd'), d_tag, NULL where a
// part has no such value.
//   $1, $2: the batch's (community, id); $3, $4: its (community, author), for bans, whether
//     the author is a member, and until when the author asked to vanish (NIP-62: probed only
//     where someone of the batch's communities did, a one-time filter of the plan);
//   $5: its communities, locked FOR KEY SHARE (migration 18: no foreign key does it per event).
//     A community deleted meanwhile is not returned: the DELETE committed first, or waits for
//     this batch to commit and then deletes its events too. Its row says, in the kind column,
//     whether it is closed (1) and archived (2): store_plan checks again the access the pod's
//     cache admitted each write with (event_write::recheck_access);
//   $6 .. $9: its addresses (community, pubkey, kind, d tag), when it has some.
//   An event whose NIP-40 expiration passed (by the database's clock) but which the minute's
//   purge has not deleted yet reads as created at -1: older than any version, so a version
//   sent after it replaces it (deleting it), as if it were already gone. A macro, as both
//   parts' SQL is one literal.
#define COMB_SNAPSHOT_EVENT_COLUMNS \
  "'e', e.community_id, e.id, e.pubkey, e.kind," \
  " CASE WHEN e.expires_at <= extract(epoch FROM statement_timestamp()) THEN -1" \
  " ELSE e.created_at END, e.d_tag"

constexpr const char* snapshot_by_id =
  "SELECT " COMB_SNAPSHOT_EVENT_COLUMNS
  " FROM unnest($1::bigint[], $2::bytea[]) AS k(community_id, id) CROSS JOIN LATERAL"
  " (SELECT * FROM events e WHERE e.community_id = k.community_id AND e.id = k.id OFFSET 0) e"
  " UNION ALL SELECT 't', t.community_id, t.event_id, t.pubkey, NULL, NULL, NULL"
  " FROM unnest($1::bigint[], $2::bytea[]) AS k(community_id, id) CROSS JOIN LATERAL"
  " (SELECT * FROM deleted_events t WHERE t.community_id = k.community_id"
  " AND t.event_id = k.id OFFSET 0) t"
  " UNION ALL SELECT 'b', b.community_id, b.event_id, NULL, NULL, NULL, NULL"
  " FROM unnest($1::bigint[], $2::bytea[]) AS k(community_id, id) CROSS JOIN LATERAL"
  " (SELECT * FROM banned_events b WHERE b.community_id = k.community_id AND b.event_id = k.id"
  " OFFSET 0) b"
  " UNION ALL SELECT 'p', b.community_id, NULL, b.pubkey, NULL, NULL, NULL"
  " FROM unnest($3::bigint[], $4::bytea[]) AS a(community_id, pubkey) CROSS JOIN LATERAL"
  " (SELECT * FROM banned_pubkeys b WHERE b.community_id = a.community_id"
  " AND b.pubkey = a.pubkey OFFSET 0) b"
  " UNION ALL SELECT 'm', m.community_id, NULL, m.pubkey, NULL, NULL, NULL"
  " FROM unnest($3::bigint[], $4::bytea[]) AS a(community_id, pubkey) CROSS JOIN LATERAL"
  " (SELECT * FROM members m WHERE m.community_id = a.community_id"
  " AND m.pubkey = a.pubkey OFFSET 0) m"
  " UNION ALL SELECT 'v', v.community_id, NULL, v.pubkey, NULL, v.until, NULL"
  " FROM unnest($3::bigint[], $4::bytea[]) AS a(community_id, pubkey) CROSS JOIN LATERAL"
  " (SELECT * FROM vanished v WHERE v.community_id = a.community_id"
  " AND v.pubkey = a.pubkey OFFSET 0) v"
  " WHERE EXISTS (SELECT 1 FROM vanished x WHERE x.community_id = ANY($5::bigint[]))"
  " UNION ALL SELECT 'c', c.id, NULL, NULL, (c.access = 'closed')::int"
  " + 2 * (c.archived_at IS NOT NULL)::int, NULL, NULL"
  " FROM (SELECT id, access, archived_at FROM communities"
  " WHERE id = ANY($5::bigint[]) FOR KEY SHARE) c";

constexpr const char* snapshot_by_address =
  " UNION ALL SELECT " COMB_SNAPSHOT_EVENT_COLUMNS
  " FROM unnest($6::bigint[], $7::bytea[], $8::int[], $9::text[])"
  " AS a(community_id, pubkey, kind, d_tag) CROSS JOIN LATERAL (SELECT * FROM events e"
  " WHERE e.community_id = a.community_id AND e.pubkey = a.pubkey AND e.kind = a.kind"
  " AND e.d_tag = a.d_tag OFFSET 0) e"
  " UNION ALL SELECT 'd', d.community_id, NULL, d.pubkey, d.kind, d.deleted_at, d.d_tag"
  " FROM unnest($6::bigint[], $7::bytea[], $8::int[], $9::text[])"
  " AS a(community_id, pubkey, kind, d_tag) CROSS JOIN LATERAL (SELECT * FROM deleted_addresses d"
  " WHERE d.community_id = a.community_id AND d.pubkey = a.pubkey AND d.kind = a.kind"
  " AND d.d_tag = a.d_tag OFFSET 0) d";

#undef COMB_SNAPSHOT_EVENT_COLUMNS

const std::string& snapshot_sql(bool with_addresses) {
  static const std::string by_id = snapshot_by_id;
  static const std::string both = by_id + snapshot_by_address;
  return with_addresses ? both : by_id;
}

pg_params snapshot_params(const batch_keys& keys) {
  pg_params params = id_columns(keys.ids);
  pg_binary_array communities(pg_type::int8), pubkeys(pg_type::bytea);
  for (const auto& [community, pubkey] : keys.authors) {
    communities.add_integer(community);
    pubkeys.add_bytes(pubkey);
  }
  params.emplace_back(communities.str());
  params.emplace_back(pubkeys.str());
  pg_binary_array batch_communities(pg_type::int8);
  for (const auto& [community, deletes_ids] : keys.communities)
    batch_communities.add_integer(community);
  params.emplace_back(batch_communities.str());
  if (!keys.addresses.empty())
    for (auto& column : address_columns(keys.addresses))
      params.push_back(std::move(column));
  return params;
}

void add_event_row(const pg_reply& reply, int row, batch_snapshot& snapshot) {
  event_key key{reply.integer(row, 1), bytes32_field(reply, row, 2)};
  stored_event stored{bytes32_field(reply, row, 3),
                      static_cast<std::uint32_t>(reply.integer(row, 4)),
                      reply.integer(row, 5),
                      std::nullopt};
  if (!reply.is_null(row, 6)) {
    stored.addr = address{key.community_id, stored.pubkey, stored.kind,
                          std::string(reply.text(row, 6))};
    snapshot.current[*stored.addr] = key;
  }
  snapshot.events[key] = std::move(stored);
}

void add_community_row(const pg_reply& reply, int row, batch_snapshot& snapshot) {
  const std::int64_t community = reply.integer(row, 1);
  const std::int64_t state = reply.integer(row, 4);
  snapshot.missing_communities.erase(community);
  if (state & 1)
    snapshot.closed_communities.insert(community);
  if (state & 2)
    snapshot.archived_communities.insert(community);
}

/// One row of snapshot_sql into the snapshot, by its first column.
void add_snapshot_row(const pg_reply& reply, int row, batch_snapshot& snapshot) {
  const std::int64_t community = reply.integer(row, 1);
  switch (reply.text(row, 0).front()) {
    case 'e': add_event_row(reply, row, snapshot); break;
    case 't':
      snapshot.tombstones.insert(
        tombstone{{community, bytes32_field(reply, row, 2)}, bytes32_field(reply, row, 3)});
      break;
    case 'd':
      snapshot.deleted_until[address{community, bytes32_field(reply, row, 3),
                                     static_cast<std::uint32_t>(reply.integer(row, 4)),
                                     std::string(reply.text(row, 6))}] = reply.integer(row, 5);
      break;
    case 'b': snapshot.banned_ids.insert(event_key{community, bytes32_field(reply, row, 2)}); break;
    case 'p': snapshot.banned_authors.emplace(community, bytes32_field(reply, row, 3)); break;
    case 'm': snapshot.member_authors.emplace(community, bytes32_field(reply, row, 3)); break;
    case 'v': snapshot.vanished_until[{community, bytes32_field(reply, row, 3)}] = reply.integer(row, 5); break;
    case 'c': add_community_row(reply, row, snapshot); break;
    default: break;
  }
}

// -- writes ---------------------------------------------------------------------

/// Deletes the keys one community at a time (`community_id = $1 AND id = ANY($2)`): whatever
/// the table's statistics say, that is one index range per key, where a join with the unnested
/// keys could be planned as a hash join over a sequential scan of every event (the plan Postgres
/// picks, and keeps as the generic plan, while the table is new and not yet analyzed).
std::optional<pg_reply> delete_events(pg_connection& connection, std::vector<event_key> keys) {
  std::sort(keys.begin(), keys.end());
  for (auto first = keys.begin(); first != keys.end();) {
    auto last = std::find_if(first, keys.end(), [&](const event_key& key) {
      return key.community_id != first->community_id;
    });
    pg_binary_array ids(pg_type::bytea);
    for (auto key = first; key != last; ++key)
      ids.add_bytes(key->id);
    auto reply = connection.exec("DELETE FROM events WHERE community_id = $1::bigint"
                                 " AND id = ANY($2::bytea[])",
                                 {std::to_string(first->community_id), ids.str()},
                                 std::vector<bool>{false, true});
    if (!reply.ok())
      return reply;
    first = last;
  }
  return std::nullopt;
}

/// Inserts the planned events. A plain insert, not `ON CONFLICT DO NOTHING`: the snapshot read
/// under the batch's locks already found none of these ids stored, and the speculative insertion
/// that ON CONFLICT needs costs every event a second probe of the primary key and one more WAL
/// record. Only a concurrent writer committing one of the same ids can still collide; that
/// fails the COPY with unique_violation, and store_batch replays the whole batch, which then
/// reads those ids as already stored.
std::optional<pg_reply> insert_events(pg_connection& connection,
                                      std::span<const event_write> writes,
                                      const std::vector<std::size_t>& inserts) {
  auto reply = connection.copy_in(event_copy_sql, event_rows(writes, inserts));
  return reply.ok() ? std::nullopt : std::optional(std::move(reply));
}

/// Inserts the planned events' tag rows (tag_rows).
std::optional<pg_reply> insert_tags(pg_connection& connection,
                                    std::span<const event_write> writes,
                                    const store_plan& plan, std::uint32_t transaction) {
  auto rows = tag_rows(writes, plan, transaction);
  if (!rows)
    return std::nullopt;
  auto reply = connection.copy_in(tag_copy_sql, *rows);
  return reply.ok() ? std::nullopt : std::optional(std::move(reply));
}

std::optional<pg_reply> remember_deletions(pg_connection& connection, const store_plan& plan) {
  if (!plan.tombstones.empty()) {
    pg_binary_array community(pg_type::int8), event_id(pg_type::bytea), pubkey(pg_type::bytea);
    for (const auto& mark : plan.tombstones) {
      community.add_integer(mark.key.community_id);
      event_id.add_bytes(mark.key.id);
      pubkey.add_bytes(mark.pubkey);
    }
    auto reply = exec_binary(
      connection,
      "INSERT INTO deleted_events (community_id, event_id, pubkey)"
      " SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) ON CONFLICT DO NOTHING",
      {community.str(), event_id.str(), pubkey.str()});
    if (!reply.ok())
      return reply;
  }
  if (plan.address_deletions.empty())
    return std::nullopt;
  std::vector<address> addresses;
  pg_binary_array deleted_at(pg_type::int8);
  for (const auto& [addr, at] : plan.address_deletions) {
    addresses.push_back(addr);
    deleted_at.add_integer(at);
  }
  pg_params params = address_columns(addresses);
  params.emplace_back(deleted_at.str());
  auto reply = exec_binary(
    connection,
    "INSERT INTO deleted_addresses (community_id, pubkey, kind, d_tag, deleted_at)"
    " SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::int[], $4::text[], $5::bigint[])"
    " ON CONFLICT (community_id, pubkey, kind, d_tag) DO UPDATE"
    " SET deleted_at = GREATEST(deleted_addresses.deleted_at, EXCLUDED.deleted_at)",
    params);
  return reply.ok() ? std::nullopt : std::optional(std::move(reply));
}

/// NIP-62, one statement per step and with its own values, so each is planned as index probes
/// (events_author_kind; event_tags_value for the wraps) whatever the tables' statistics say: the
/// batch holds its community's lock exclusively meanwhile. Each deleted event takes its tags
/// (and the rooms it borrowed) with it by trigger.
std::optional<pg_reply> carry_out_vanish(pg_connection& connection, const vanish_request& request) {
  const std::string community = std::to_string(request.community_id);
  const std::string until = std::to_string(request.until);
  auto binary = [](const protocol::bytes32& bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  const std::string pubkey = binary(request.pubkey);
  const std::string request_id = binary(request.request_id);
  auto authored = connection.exec("DELETE FROM events WHERE community_id = $1::bigint AND pubkey = $2::bytea"
                                  " AND created_at <= $3::bigint",
                                  {community, pubkey, until}, std::vector<bool>{false, true, false});
  if (!authored.ok())
    return authored;
  // NIP-62: deleted events must not come back. A wrap's author is a key used once, so the
  // author's line does not stop a wrap sent again: each is remembered as a deleted id.
  auto wraps = connection.exec(
    "WITH gone AS (DELETE FROM events WHERE community_id = $1::bigint AND kind = "
      + std::to_string(protocol::gift_wrap_kind)
      + " AND id IN (SELECT event_id FROM event_tags WHERE community_id = $1::bigint AND name = 'p'"
        " AND value = $2::text) RETURNING community_id, id, pubkey)"
        " INSERT INTO deleted_events (community_id, event_id, pubkey) SELECT * FROM gone ON CONFLICT DO NOTHING",
    {community, protocol::to_hex(request.pubkey)});
  if (!wraps.ok())
    return wraps;
  // A client's request that took nothing leaves no line: nothing of its author was here to come
  // back, and a fresh key per request would otherwise grow the table without bound.
  if (!request.keeps_line && authored.affected_rows() + wraps.affected_rows() == 0)
    return std::nullopt;
  const std::optional<std::string> signed_request =
    request.request_json ? std::optional(*request.request_json) : std::nullopt;
  auto remembered = connection.exec(
    "INSERT INTO vanished (community_id, pubkey, until, request_id, request)"
    " VALUES ($1::bigint, $2::bytea, $3::bigint, $4::bytea, $5::text)"
    " ON CONFLICT (community_id, pubkey) DO UPDATE SET until = EXCLUDED.until, request_id = EXCLUDED.request_id,"
    " request = EXCLUDED.request, requested_at = now() WHERE vanished.until < EXCLUDED.until",
    {community, pubkey, until, request_id, signed_request}, std::vector<bool>{false, true, false, true, false});
  return remembered.ok() ? std::nullopt : std::optional(std::move(remembered));
}

/// A stored room's row (community in column 0, the room's id in `id_column`, in
/// `restricted_column` whether only its members post: `restricted`, or `hidden`, a room that
/// does not exist to outsiders, protocol::room_unseen) into the snapshot's rooms.
void add_room_row(const pg_reply& reply, int row, int id_column, int restricted_column,
                  batch_snapshot& snapshot) {
  std::pair<std::int64_t, std::string> room{reply.integer(row, 0), std::string(reply.text(row, id_column))};
  if (reply.text(row, restricted_column) == "t")
    snapshot.restricted_rooms.insert(room);
  snapshot.rooms.insert(std::move(room));
}

/// Rows of (community, event id, room, restricted) into `rooms` by event, and each room that
/// exists into the snapshot's rooms; nothing when the statement was not sent.
void add_rooms_of_events(const std::vector<pg_reply>& replies, std::optional<std::size_t> at,
                         std::map<event_key, std::vector<std::string>>& rooms, batch_snapshot& snapshot) {
  if (!at)
    return;
  const pg_reply& reply = replies[*at];
  for (int row = 0; row < reply.rows(); ++row) {
    rooms[event_key{reply.integer(row, 0), bytes32_field(reply, row, 1)}].emplace_back(reply.text(row, 2));
    if (!reply.is_null(row, 3))
      add_room_row(reply, row, 2, 3, snapshot);
  }
}

/// Each room of the events `k(community_id, id)`: their `h`, or those they borrowed (one partial
/// index each), and whether the room, if it exists, is restricted.
constexpr const char* rooms_of_keyed_events =
  " CROSS JOIN LATERAL (SELECT community_id, event_id, value FROM event_tags"
  " WHERE community_id = k.community_id AND event_id = k.id AND name = 'h'"
  " UNION ALL SELECT community_id, event_id, value FROM event_tags"
  " WHERE community_id = k.community_id AND event_id = k.id AND name = 'room') t"
  " LEFT JOIN rooms r ON r.community_id = t.community_id AND r.room_id = t.value";

/// Adds `sql` to `statements` when `wanted`, its array `params` sent in binary; its reply's
/// place, or nothing.
std::optional<std::size_t> read_if(std::vector<pg_connection::pipelined>& statements, bool wanted,
                                   std::string_view sql, const pg_params& params) {
  if (!wanted)
    return std::nullopt;
  statements.push_back({sql, &params, std::vector<bool>(params.size(), true)});
  return statements.size() - 1;
}

} // namespace

std::variant<batch_snapshot, pg_reply> begin_with_snapshot(pg_connection& connection,
                                                           const std::vector<lock_request>& locks,
                                                           const batch_keys& keys) {
  pg_array lock_keys;
  pg_array exclusive;
  for (const auto& lock : locks) {
    lock_keys.add_integer(lock.key);
    exclusive.add_text(lock.exclusive ? "t" : "f");
  }
  const pg_params lock_params{lock_keys.str(), exclusive.str()};
  const pg_params read_params = snapshot_params(keys);
  std::vector<pg_connection::pipelined> statements{{"BEGIN", nullptr, {}}};
  // A function scan yields the array in order, so the locks are taken in ascending key order
  // and two batches can never wait for each other in a cycle.
  if (!locks.empty())
    statements.push_back(
      {"SELECT CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END"
       " FROM unnest($1::bigint[], $2::bool[]) AS u(k, x)",
       &lock_params, {}});
  // The rooms the writes were admitted into, read after the community lock: a room deletion
  // takes it exclusively (room_store delete_room), so it either committed before this read (and
  // its room's late events are refused) or waits for this batch (and deletes them with the rest).
  const pg_params room_params = room_columns(keys.rooms);
  auto rooms_reply = read_if(statements, !keys.rooms.empty(),
                             "SELECT r.community_id, r.room_id, r.restricted OR r.hidden, r.private OR r.hidden"
                             " FROM unnest($1::bigint[], $2::text[])"
                             " AS k(community_id, room_id) JOIN rooms r ON r.community_id = k.community_id"
                             " AND r.room_id = k.room_id",
                             room_params);
  // The rooms of the writes' referents (protocol::room_referents: comments' roots, what reports
  // report, what receipts zapped), read after the community lock too: stored with each, they
  // decide who reads it, and a restricted one who may comment. A referent's rooms are its `h`,
  // or those it borrowed itself (a report of a comment): one partial index each.
  const pg_params referent_params = id_columns(keys.room_referents);
  static const std::string referents_sql =
    std::string("SELECT t.community_id, t.event_id, t.value, r.restricted OR r.hidden"
                " FROM unnest($1::bigint[], $2::bytea[]) AS k(community_id, id)") + rooms_of_keyed_events;
  auto referents_reply = read_if(statements, !keys.room_referents.empty(), referents_sql, referent_params);
  // The rooms of the live version of each address a write may borrow them from
  // (protocol::keeps_rooms_of_replaced: an edit without its `h`), its `h` or those it borrowed,
  // read after the community lock too, and whether each is restricted: the edit posts there.
  const pg_params version_params = address_columns(keys.borrowing_addresses);
  static const std::string versions_sql =
    std::string("SELECT t.community_id, t.event_id, t.value, r.restricted OR r.hidden"
                " FROM unnest($1::bigint[], $2::bytea[], $3::int[], $4::text[])"
                " AS a(community_id, pubkey, kind, d_tag) CROSS JOIN LATERAL (SELECT e.community_id, e.id"
                " FROM events e WHERE e.community_id = a.community_id AND e.pubkey = a.pubkey"
                " AND e.kind = a.kind AND e.d_tag = a.d_tag OFFSET 0) k") + rooms_of_keyed_events;
  auto versions_reply = read_if(statements, !keys.borrowing_addresses.empty(), versions_sql, version_params);
  statements.push_back({"SELECT txid_current() % 4294967296", nullptr, {}});
  statements.push_back({snapshot_sql(!keys.addresses.empty()), &read_params,
                        std::vector<bool>(read_params.size(), true)});
  // Every statement of the batch runs its generic plan, planned once per connection: the plans
  // are index probes per unnested key whatever the values, and planning them anew for each
  // batch cost the writer backend up to 8 % at small batches. The session's plan mode is set
  // before BEGIN and holds for the whole transaction.
  auto replies = connection.exec_pipeline(statements, true);
  for (auto& reply : replies)
    if (!reply.ok())
      return std::move(reply);
  const pg_reply& reply = replies.back();
  batch_snapshot snapshot;
  for (const auto& [community, deletes_ids] : keys.communities)
    snapshot.missing_communities.insert(community); // until its row comes back
  for (int row = 0; row < reply.rows(); ++row)
    add_snapshot_row(reply, row, snapshot);
  if (rooms_reply) {
    const pg_reply& rooms = replies[*rooms_reply];
    for (int row = 0; row < rooms.rows(); ++row) {
      add_room_row(rooms, row, 1, 2, snapshot);
      if (rooms.text(row, 2) == "t" && rooms.text(row, 3) == "t")
        snapshot.unread_by_outsiders.emplace(rooms.integer(row, 0), std::string(rooms.text(row, 1)));
    }
  }
  add_rooms_of_events(replies, referents_reply, snapshot.referent_rooms, snapshot);
  add_rooms_of_events(replies, versions_reply, snapshot.version_rooms, snapshot);
  snapshot.transaction = static_cast<std::uint32_t>(replies[replies.size() - 2].integer(0, 0));
  return snapshot;
}

std::optional<pg_reply> read_room_posters(pg_connection& connection,
                                          const std::vector<room_poster>& posters,
                                          batch_snapshot& snapshot) {
  if (posters.empty())
    return std::nullopt;
  pg_binary_array communities(pg_type::int8), rooms(pg_type::text), pubkeys(pg_type::bytea);
  for (const auto& poster : posters) {
    communities.add_integer(poster.community_id);
    rooms.add_bytes(std::string_view(poster.room));
    pubkeys.add_bytes(poster.pubkey);
  }
  // protocol::room_write_allowed, for a restricted room: its members, the community's owner
  // and admins.
  auto reply = exec_binary(
    connection,
    "SELECT k.community_id, k.room_id, k.pubkey FROM unnest($1::bigint[], $2::text[], $3::bytea[])"
    " AS k(community_id, room_id, pubkey)"
    " WHERE EXISTS (SELECT 1 FROM room_members rm WHERE rm.community_id = k.community_id"
    " AND rm.room_id = k.room_id AND rm.pubkey = k.pubkey)"
    " OR EXISTS (SELECT 1 FROM members m WHERE m.community_id = k.community_id"
    " AND m.pubkey = k.pubkey AND m.role IN ('owner', 'admin'))",
    {communities.str(), rooms.str(), pubkeys.str()});
  if (!reply.ok())
    return reply;
  for (int row = 0; row < reply.rows(); ++row)
    snapshot.room_posters.insert(
      room_poster{reply.integer(row, 0), std::string(reply.text(row, 1)), bytes32_field(reply, row, 2)});
  return std::nullopt;
}

std::optional<pg_reply> write_plan(pg_connection& connection,
                                   std::span<const event_write> writes,
                                   store_plan& plan, std::uint32_t transaction) {
  if (auto failed = delete_events(connection, plan.deletes))
    return failed;
  for (const auto& request : plan.vanishes)
    if (auto failed = carry_out_vanish(connection, request))
      return failed;
  if (!plan.inserts.empty()) {
    if (auto failed = insert_events(connection, writes, plan.inserts))
      return failed;
    if (auto failed = insert_tags(connection, writes, plan, transaction))
      return failed;
  }
  return remember_deletions(connection, plan);
}

} // namespace comb::storage
