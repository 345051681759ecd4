// SPDX-License-Identifier: MIT
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "protocol/canonical_json.hpp"
#include "protocol/event_json.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

namespace comb::test {

/// Room fixtures shared by the room tests: a community with its owner and a room store.

inline storage::room_command room_command(const author& who, std::uint32_t kind,
                                          std::vector<protocol::tag> tags, std::int64_t created_at) {
  auto ev = who.sign(kind, created_at, std::move(tags));
  auto request = protocol::parse_room_request(*ev);
  REQUIRE(request);
  return {*ev, protocol::render_event_json(*ev), request.value()};
}

/// Applies a command, moving the test clock over seconds the room's state must wait for.
inline storage::room_write paced_room(storage::room_store& store, std::int64_t community,
                                      const storage::room_command& command, std::int64_t& now) {
  for (;;) {
    auto write = store.apply(community, command, now);
    if (write.retry_at == 0)
      return write;
    now = write.retry_at;
  }
}

struct room_fixture : membership_fixture {
  room_fixture() : rooms(connection, relay_key) {
    REQUIRE(apply(command(storage::membership_change::provision_owner, owner.pubkey(),
                          storage::member_role::owner))
              .committed);
    now = now_seconds();
  }

  storage::room_write run(const author& who, std::uint32_t kind, std::vector<protocol::tag> tags) {
    tags.insert(tags.begin(), {"h", "pizza"});
    return paced_room(rooms, community, room_command(who, kind, std::move(tags), now), now);
  }

  /// Creates `room` as Flotilla does, a 9007 and then a 9002 with its flags (none: an open,
  /// public room); a room is locked until its first 9002.
  void open_room(const std::string& room = "pizza") {
    REQUIRE(paced_room(rooms, community, room_command(owner, 9007, {{"h", room}}, now), now).committed);
    REQUIRE(paced_room(rooms, community, room_command(owner, 9002, {{"h", room}, {"name", room}}, now), now)
              .outcome == protocol::room_outcome::changed);
  }

  std::string count(const std::string& sql) {
    storage::pg_connection reader(database.conninfo());
    return scalar(reader, sql, {std::to_string(community)});
  }

  /// The p tags of the live 39002 of `room` (there must be exactly one).
  std::vector<std::string> listed_members(const std::string& room = "pizza") {
    storage::pg_connection reader(database.conninfo());
    auto reply = reader.exec("SELECT raw FROM events WHERE community_id = $1::bigint AND kind = 39002"
                             " AND d_tag = $2",
                             {std::to_string(community), room});
    REQUIRE(reply.ok());
    REQUIRE(reply.rows() == 1);
    auto ev = storage::parse_stored_list(reply.text(0, 0));
    REQUIRE(ev);
    std::vector<std::string> out;
    for (const auto& t : ev->tags)
      if (t.size() >= 2 && t[0] == "p")
        out.push_back(t[1]);
    return out;
  }

  author owner{1}, alice{2}, bob{3}, carol{4};
  storage::room_store rooms;
  std::int64_t now = 0;
};

} // namespace comb::test
