// SPDX-License-Identifier: MIT
#include "storage/community_rekey.hpp"

#include <limits>
#include <vector>

#include "protocol/canonical_json.hpp"
#include "protocol/event.hpp"
#include "protocol/event_check.hpp"
#include "storage/community_keys.hpp"
#include "storage/event_rows.hpp"
#include "storage/member_list.hpp"
#include "storage/membership_steps.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_transaction.hpp"

namespace comb::storage {
namespace {

using membership_steps::insert_list;
using membership_steps::noted_version;

/// The relay's stored events that a newer one of their address replaces: the live list, role
/// definitions and room state. Its deltas (8000/8001) and room changes (9000/9001/9008) are
/// history and keep the relay key: apps show them by id, and a copy under a new id would show
/// twice on every device that holds the first.
std::string replaced_relay_kinds() {
  pg_array kinds;
  for (std::uint32_t kind : {13534u, 33534u})
    kinds.add_integer(kind);
  for (std::uint32_t kind = 39000; kind <= 39005; ++kind)
    kinds.add_integer(kind);
  return kinds.str();
}

protocol::event signed_again(protocol::event ev, const protocol::key_pair& key) {
  ev.pubkey = key.public_key();
  ev.id = protocol::compute_id(ev);
  ev.sig = key.sign(ev.id);
  return ev;
}

/// Whether the community key holds the address of `ev` with an event as new or newer.
bool replaced_already(pg_connection& c, std::int64_t community_id, const protocol::event& ev,
                      const std::optional<std::string>& d_tag) {
  return row_exists(c,
                    "SELECT 1 FROM events WHERE community_id = $1::bigint AND pubkey = $2::bytea"
                    " AND kind = $3::int AND d_tag IS NOT DISTINCT FROM $4 AND created_at >= $5::bigint",
                    {std::to_string(community_id), bytea_param(ev.pubkey), std::to_string(ev.kind),
                     d_tag, std::to_string(ev.created_at)},
                    "read the community key's copy");
}

void delete_event(pg_connection& c, std::int64_t community_id, const protocol::bytes32& id) {
  must(c.exec("DELETE FROM events WHERE community_id = $1::bigint AND id = $2::bytea",
              {std::to_string(community_id), bytea_param(id)}),
       "delete the relay key's copy");
}

/// Moves one stored event; the id of the copy written, if one was.
std::optional<protocol::bytes32> move_event(pg_connection& c, std::int64_t community_id,
                                            const protocol::key_pair& key,
                                            const protocol::event& old,
                                            const std::optional<std::string>& d_tag) {
  relay_signed_event moved{signed_again(old, key), {}};
  moved.json = protocol::render_event_json(moved.ev);
  delete_event(c, community_id, old.id);
  if (replaced_already(c, community_id, moved.ev, d_tag))
    return std::nullopt;
  must(c.exec("DELETE FROM events WHERE community_id = $1::bigint AND pubkey = $2::bytea"
              " AND kind = $3::int AND d_tag IS NOT DISTINCT FROM $4",
              {std::to_string(community_id), bytea_param(key.public_key()),
               std::to_string(old.kind), d_tag}),
       "retire the community key's older copy");
  if (old.kind == member_list_kind)
    insert_list(c, community_id, moved.ev, moved.json);
  else
    insert_event(c, community_id, moved);
  return moved.ev.id;
}

/// What lifting the bans of the relay's own keys did (in_transaction's shape).
struct lifted_bans {
  std::string error;
  std::optional<std::size_t> lifted;
  std::int64_t retry_at = 0;
};

/// Where the pages have got to: the (created_at, id) of the last event read.
struct rekey_cursor {
  std::string created_at = std::to_string(std::numeric_limits<std::int64_t>::min());
  std::string id_hex;
};

/// One page after `cursor`, which it moves on; `read` says how many events it read.
rekey_result move_page(pg_connection& c, const protocol::key_pair& relay_key,
                       std::int64_t community_id, std::size_t page, rekey_cursor& cursor,
                       std::size_t& read) {
  rekey_result out;
  read = 0;
  const std::string community = std::to_string(community_id);
  if (!row_exists(c, "SELECT 1 FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE",
                  {community}, "lock community"))
    return out;
  auto rows = must(c.exec("SELECT raw, d_tag, created_at, encode(id, 'hex') FROM events"
                          " WHERE community_id = $1::bigint AND pubkey = $2::bytea"
                          " AND kind = ANY($3::int[]) AND (created_at, id) > ($5::bigint, decode($6, 'hex'))"
                          " ORDER BY created_at, id LIMIT $4::bigint",
                          {community, bytea_param(relay_key.public_key()), replaced_relay_kinds(),
                           std::to_string(page), cursor.created_at, cursor.id_hex}),
                   "read the relay key's events");
  read = static_cast<std::size_t>(rows.rows());
  if (rows.rows() == 0)
    return out;
  cursor = {std::string(rows.text(rows.rows() - 1, 2)), std::string(rows.text(rows.rows() - 1, 3))};
  auto key = read_community_key(c, relay_key, community_id);
  std::vector<protocol::bytes32> written;
  for (int row = 0; row < rows.rows(); ++row) {
    // Left where it is when it cannot be read or its signature fails (the community's key signs
    // only what the relay key did): nothing stored is lost, and the start goes on.
    auto old = parse_stored_list(rows.text(row, 0));
    if (!old || protocol::verify_event(*old) || old->pubkey != relay_key.public_key()) {
      ++out.unreadable;
      continue;
    }
    auto d_tag = rows.is_null(row, 1) ? std::nullopt : std::optional<std::string>(rows.text(row, 1));
    if (auto id = move_event(c, community_id, key, *old, d_tag)) {
      written.push_back(*id);
      ++out.signed_again;
    } else {
      ++out.dropped;
    }
  }
  if (out.signed_again + out.dropped > 0) // a deletion alone changes what REQs get, too
    (void)noted_version(c, community_id, written);
  return out;
}

} // namespace

rekey_result move_to_community_key(pg_connection& connection, const protocol::key_pair& relay_key,
                                   std::int64_t community_id, std::size_t page) {
  rekey_result total;
  rekey_cursor cursor;
  for (std::size_t read = page; read == page;) {
    auto done = in_transaction<rekey_result>(connection, "", [&] {
      auto out = move_page(connection, relay_key, community_id, page, cursor, read);
      out.committed = true;
      return out;
    });
    if (!done.committed) {
      total.error = done.error;
      return total;
    }
    total.signed_again += done.signed_again;
    total.dropped += done.dropped;
    total.unreadable += done.unreadable;
  }
  total.committed = true;
  return total;
}

std::optional<std::size_t> lift_bans_of_own_keys(pg_connection& connection,
                                                 const protocol::key_pair& relay_key,
                                                 std::int64_t community_id, std::string& error) {
  auto done = in_transaction<lifted_bans>(connection, "", [&] {
    pg_array own;
    for (const auto& key : community_keys(relay_key).own_keys(connection, community_id))
      own.add_bytea(key);
    auto lifted = must(connection.exec("DELETE FROM banned_pubkeys WHERE community_id = $1::bigint"
                                       " AND pubkey = ANY($2::bytea[]) RETURNING 1",
                                       {std::to_string(community_id), own.str()}),
                       "lift the bans of the relay's own keys");
    if (lifted.rows() > 0)
      (void)noted_version(connection, community_id, {});
    return lifted_bans{{}, static_cast<std::size_t>(lifted.rows()), 0};
  });
  error = done.error;
  return done.lifted;
}

} // namespace comb::storage
