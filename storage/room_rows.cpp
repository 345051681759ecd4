// SPDX-License-Identifier: MIT
#include "storage/room_rows.hpp"

#include <map>
#include <string_view>
#include <unordered_map>

#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

using protocol::room_state;

constexpr const char* room_columns = "name, about, picture, private, restricted, hidden, closed";

std::vector<std::string> split_roles(std::string_view joined) {
  std::vector<std::string> roles;
  while (!joined.empty()) {
    auto comma = joined.find(',');
    roles.emplace_back(joined.substr(0, comma));
    joined = comma == std::string_view::npos ? std::string_view{} : joined.substr(comma + 1);
  }
  return roles;
}

std::string joined_roles(const std::vector<std::string>& roles) {
  std::string out;
  for (const auto& role : roles)
    out += (out.empty() ? "" : ",") + role;
  return out;
}

protocol::room_metadata metadata_of(const pg_reply& reply, int row, int first) {
  protocol::room_metadata meta;
  meta.name = reply.text(row, first);
  meta.about = reply.text(row, first + 1);
  meta.picture = reply.text(row, first + 2);
  meta.flags = {reply.text(row, first + 3) == "t", reply.text(row, first + 4) == "t",
                reply.text(row, first + 5) == "t", reply.text(row, first + 6) == "t"};
  return meta;
}

std::vector<protocol::room_member> read_room_members(pg_connection& c, std::int64_t community_id,
                                                     const std::string& room) {
  auto reply = must(c.exec("SELECT encode(pubkey, 'hex'), array_to_string(roles, ',')"
                           " FROM room_members WHERE community_id = $1::bigint AND room_id = $2"
                           " ORDER BY position",
                           {std::to_string(community_id), room}),
                    "read room members");
  std::vector<protocol::room_member> members;
  for (int row = 0; row < reply.rows(); ++row)
    members.push_back({protocol::array_from_hex<32>(reply.text(row, 0)).value_or(protocol::bytes32{}),
                       split_roles(reply.text(row, 1))});
  return members;
}

} // namespace

room_state read_room(pg_connection& c, std::int64_t community_id, const std::string& room) {
  auto reply = must(c.exec(std::string("SELECT ") + room_columns
                             + " FROM rooms WHERE community_id = $1::bigint AND room_id = $2",
                           {std::to_string(community_id), room}),
                    "read room");
  room_state state;
  state.id = room;
  if (reply.rows() == 0)
    return state;
  state.exists = true;
  state.meta = metadata_of(reply, 0, 0);
  state.members = read_room_members(c, community_id, room);
  return state;
}

std::optional<std::vector<room_state>> load_rooms(pg_connection& connection,
                                                  std::int64_t community_id) {
  const std::string community = std::to_string(community_id);
  auto rooms = connection.exec(std::string("SELECT room_id, ") + room_columns
                                 + " FROM rooms WHERE community_id = $1::bigint ORDER BY room_id",
                               {community});
  auto members = connection.exec("SELECT room_id, encode(pubkey, 'hex'), array_to_string(roles, ',')"
                                 " FROM room_members WHERE community_id = $1::bigint"
                                 " ORDER BY room_id, position",
                                 {community});
  if (!rooms.ok() || !members.ok())
    return std::nullopt;
  std::vector<room_state> out;
  std::map<std::string, std::size_t, std::less<>> index;
  for (int row = 0; row < rooms.rows(); ++row) {
    room_state room;
    room.exists = true;
    room.id = rooms.text(row, 0);
    room.meta = metadata_of(rooms, row, 1);
    index.emplace(room.id, out.size());
    out.push_back(std::move(room));
  }
  for (int row = 0; row < members.rows(); ++row) {
    auto it = index.find(members.text(row, 0));
    if (it == index.end())
      continue;
    out[it->second].members.push_back(
      {protocol::array_from_hex<32>(members.text(row, 1)).value_or(protocol::bytes32{}),
       split_roles(members.text(row, 2))});
  }
  return out;
}

void write_members(pg_connection& c, std::int64_t community_id, const room_state& before,
                   const room_state& after) {
  const std::string community = std::to_string(community_id);
  // By pubkey, not by find_member: a room holds up to 10,000 members and a batch of requests
  // writes once per request.
  std::unordered_map<protocol::bytes32, const protocol::room_member*, protocol::bytes32_hash> was, is;
  for (const auto& m : before.members)
    was.emplace(m.pubkey, &m);
  for (const auto& m : after.members)
    is.emplace(m.pubkey, &m);
  pg_array gone;
  for (const auto& m : before.members)
    if (!is.contains(m.pubkey))
      gone.add_bytea(m.pubkey);
  if (!gone.empty())
    must(c.exec("DELETE FROM room_members WHERE community_id = $1::bigint AND room_id = $2"
                " AND pubkey = ANY($3::bytea[])",
                {community, after.id, gone.str()}),
         "remove room members");
  for (const auto& m : after.members) {
    auto old = was.find(m.pubkey);
    if (old != was.end() && old->second->roles == m.roles)
      continue;
    must(c.exec("INSERT INTO room_members (community_id, room_id, pubkey, roles)"
                " VALUES ($1::bigint, $2, $3::bytea, string_to_array($4, ','))"
                " ON CONFLICT (community_id, room_id, pubkey) DO UPDATE SET roles = EXCLUDED.roles",
                {community, after.id, bytea_param(m.pubkey), joined_roles(m.roles)}),
         "write room member");
  }
}

void write_metadata(pg_connection& c, std::int64_t community_id, const room_state& room) {
  const auto& m = room.meta;
  must(c.exec("UPDATE rooms SET name = $3, about = $4, picture = $5, private = $6::bool,"
              " restricted = $7::bool, hidden = $8::bool, closed = $9::bool"
              " WHERE community_id = $1::bigint AND room_id = $2",
              {std::to_string(community_id), room.id, m.name, m.about, m.picture,
               m.flags.is_private ? "t" : "f", m.flags.restricted ? "t" : "f",
               m.flags.hidden ? "t" : "f", m.flags.closed ? "t" : "f"}),
       "write room metadata");
}

} // namespace comb::storage
