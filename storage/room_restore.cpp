// SPDX-License-Identifier: MIT
// Room writes that are not a client's request: rooms restored from a file (comb-admin) and a
// removed community member taken out of every room.
#include "storage/room_store.hpp"

#include <algorithm>
#include <set>

#include "protocol/room_events.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_rows.hpp"
#include "storage/room_transaction.hpp"

namespace comb::storage {

using protocol::room_state;

namespace {

/// The pubkeys a statement of one community returns (hex in its first column).
std::set<protocol::bytes32> pubkeys_of(pg_connection& c, const char* sql, std::int64_t community_id,
                                       const char* what) {
  auto reply = must(c.exec(sql, {std::to_string(community_id)}), what);
  std::set<protocol::bytes32> out;
  for (int row = 0; row < reply.rows(); ++row)
    if (auto pubkey = protocol::array_from_hex<32>(reply.text(row, 0)))
      out.insert(*pubkey);
  return out;
}

std::set<protocol::bytes32> community_members(pg_connection& c, std::int64_t community_id) {
  return pubkeys_of(c, "SELECT encode(pubkey, 'hex') FROM members WHERE community_id = $1::bigint",
                    community_id, "read members");
}

std::set<protocol::bytes32> community_bans(pg_connection& c, std::int64_t community_id) {
  return pubkeys_of(c, "SELECT encode(pubkey, 'hex') FROM banned_pubkeys WHERE community_id = $1::bigint",
                    community_id, "read bans");
}

/// The room as it may be created here: only members of a closed community, nobody banned from
/// it, within the bound.
room_state admissible(const room_state& room, bool closed, const std::set<protocol::bytes32>& members,
                      const std::set<protocol::bytes32>& banned, std::size_t& left_out) {
  room_state kept = room;
  kept.exists = true;
  kept.members.clear();
  for (const auto& member : room.members) {
    if ((closed && !members.contains(member.pubkey)) || banned.contains(member.pubkey)
        || static_cast<std::int64_t>(kept.members.size()) >= max_members_per_room
        || protocol::find_member(kept, member.pubkey)) {
      ++left_out;
      continue;
    }
    kept.members.push_back(member);
  }
  return kept;
}

/// restore_rooms inside its transaction. Throws statement_failed or room_must_wait.
rooms_restore restore_locked(pg_connection& c, const protocol::key_pair& relay,
                             std::int64_t community_id, const std::vector<room_state>& rooms,
                             std::int64_t now) {
  const std::string community = std::to_string(community_id);
  auto locked = must(c.exec("SELECT access FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE",
                            {community}),
                     "lock community");
  if (locked.rows() == 0)
    throw statement_failed("community " + community + " does not exist");
  const bool closed = locked.text(0, 0) == "closed";
  const auto members = closed ? community_members(c, community_id) : std::set<protocol::bytes32>{};
  const auto banned = community_bans(c, community_id);
  auto held = row_count(c, "SELECT count(*) FROM rooms WHERE community_id = $1::bigint", {community},
                    "count rooms");
  rooms_restore out;
  out.committed = true;
  for (const auto& room : rooms) {
    if (row_exists(c, "SELECT 1 FROM rooms WHERE community_id = $1::bigint AND room_id = $2",
               {community, room.id}, "find room")) {
      ++out.existing;
      continue;
    }
    if (held >= max_rooms_per_community) {
      ++out.rooms_left_out;
      continue;
    }
    if (auto newest = room_clock(c, community_id, room.id); newest >= now)
      throw room_must_wait{newest + 1};
    auto kept = admissible(room, closed, members, banned, out.members_left_out);
    must(c.exec("INSERT INTO rooms (community_id, room_id, name) VALUES ($1::bigint, $2, $3)",
                {community, kept.id, kept.meta.name}),
         "create room");
    write_metadata(c, community_id, kept);
    write_members(c, community_id, room_state{false, kept.id, {}, {}, {}}, kept);
    protocol::room_parts parts;
    parts.metadata = parts.admins = parts.members = parts.roles = true;
    parts.pins = !kept.pins.empty();
    auto state = write_state(c, relay, community_id, kept, parts, now);
    out.events.insert(out.events.end(), state.begin(), state.end());
    ++out.restored;
    ++held;
  }
  if (out.events.empty())
    return out;
  out.state_version = noted_change(c, community_id, out.events);
  return out;
}

} // namespace

rooms_restore restore_rooms(pg_connection& connection, const protocol::key_pair& relay_key,
                            std::int64_t community_id, const std::vector<room_state>& rooms,
                            std::int64_t now) {
  return in_transaction<rooms_restore>(
    connection, "a room's state of this second is written; waiting",
    [&] {
      auto key = read_community_key(connection, relay_key, community_id);
      return restore_locked(connection, key, community_id, rooms, now);
    });
}

std::vector<relay_signed_event>
remove_from_rooms(pg_connection& tx, const protocol::key_pair& community_key, std::int64_t community_id,
                  const std::vector<protocol::bytes32>& pubkeys, std::int64_t now,
                  std::int64_t& wait_until) {
  wait_until = 0;
  if (pubkeys.empty())
    return {};
  const std::string community = std::to_string(community_id);
  pg_array keys;
  for (const auto& pubkey : pubkeys)
    keys.add_bytea(pubkey);
  auto affected = must(tx.exec("SELECT m.room_id, bool_or(cardinality(m.roles) > 0),"
                               " coalesce(max(c.newest_state_at), 0)"
                               " FROM room_members m LEFT JOIN room_clocks c"
                               " ON c.community_id = m.community_id AND c.room_id = m.room_id"
                               " WHERE m.community_id = $1::bigint AND m.pubkey = ANY($2::bytea[])"
                               " GROUP BY m.room_id ORDER BY m.room_id",
                               {community, keys.str()}),
                       "find rooms of removed members");
  // A removal (a ban, a close) goes one second ahead of the clock rather than wait: a room busy
  // with requests takes every second's state as it begins, and a removal that waited for one it
  // had first could wait for as long as the room stays busy. Never more than a second ahead
  // (DESIGN: lists keep pace with the clock).
  // A state further ahead than max_list_wait_seconds says the writer's clock is behind: the
  // removal is written after it at once, as a removal from the community is.
  for (int row = 0; row < affected.rows(); ++row)
    if (auto newest = affected.integer(row, 2); newest > now && newest - now <= max_list_wait_seconds)
      wait_until = std::max(wait_until, newest);
  if (wait_until != 0 || affected.rows() == 0)
    return {};
  must(tx.exec("DELETE FROM room_members WHERE community_id = $1::bigint AND pubkey = ANY($2::bytea[])",
               {community, keys.str()}),
       "remove from rooms");
  std::vector<relay_signed_event> written;
  for (int row = 0; row < affected.rows(); ++row) {
    auto room = read_room(tx, community_id, std::string(affected.text(row, 0)));
    protocol::room_parts parts;
    parts.members = true;
    parts.admins = affected.text(row, 1) == "t";
    auto state = write_state(tx, community_key, community_id, room, parts,
                             std::max(now, affected.integer(row, 2) + 1));
    written.insert(written.end(), state.begin(), state.end());
  }
  return written;
}

} // namespace comb::storage
