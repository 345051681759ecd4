// SPDX-License-Identifier: MIT
// comb-admin room list|members, and `member remove` taking the member out of every room in the
// same transaction as the list.
#include <catch2/catch.hpp>

#include "cli_fixture.hpp"
#include "room_request.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/room.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"

using namespace comb;
using namespace comb::test;

TEST_CASE("room list and room members show rooms, member remove empties them", "[cli]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto owner_hex = protocol::to_hex(owner.public_key());
  auto alice_hex = protocol::to_hex(alice.public_key());
  f.admin_ok({"community", "create", "c.example", "--owner", owner_hex});
  f.admin_ok({"member", "add", "c.example", alice_hex});
  auto community = std::stoll(f.sql("SELECT id FROM communities WHERE host = 'c.example'"));
  storage::pg_connection connection(f.database.conninfo());
  storage::room_store rooms(connection, f.relay_key);
  std::int64_t now = std::time(nullptr);
  using o = protocol::room_outcome;
  REQUIRE(room_request(rooms, community, owner, 9007, {{"h", "pizza"}}, now) == o::changed);
  REQUIRE(room_request(rooms, community, owner, 9002, {{"h", "pizza"}, {"name", "Pizza"}, {"private"}}, now) == o::changed);
  REQUIRE(room_request(rooms, community, owner, 9000, {{"h", "pizza"}, {"p", alice_hex, "moderator"}}, now) == o::changed);

  auto list = f.admin_ok({"room", "list", "c.example", "--json"}).json();
  auto& rows = list.at("rooms").as_array();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("id").as_string() == "pizza");
  CHECK(rows[0].at("name").as_string() == "Pizza");
  CHECK(rows[0].at("flags").as_string() == "private");
  CHECK(rows[0].at("members").as_int64() == 2);
  auto members = f.admin_ok({"room", "members", "c.example", "pizza", "--json"}).json();
  auto& people = members.at("members").as_array();
  REQUIRE(people.size() == 2);
  CHECK(people[1].at("pubkey").as_string() == alice_hex);
  CHECK(people[1].at("roles").as_array()[0].as_string() == "moderator");
  CHECK(f.admin({"room", "members", "c.example", "nowhere"}).exit_code == 2);

  f.admin_ok({"member", "remove", "c.example", alice_hex});
  members = f.admin_ok({"room", "members", "c.example", "pizza", "--json"}).json();
  CHECK(members.at("members").as_array().size() == 1);
  // The room's live 39001 and 39002 were rewritten without her, by the relay key.
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind IN (39001, 39002) AND d_tag = 'pizza'"
              " AND position($1 in raw) > 0",
              {alice_hex})
        == "0");
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind = 39002 AND d_tag = 'pizza'") == "1");
}

TEST_CASE("community set-access closed takes non-members out of the rooms", "[cli]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  auto owner_hex = protocol::to_hex(owner.public_key());
  auto bob_hex = protocol::to_hex(bob.public_key());
  f.admin_ok({"community", "create", "c.example", "--owner", owner_hex});
  auto community = std::stoll(f.sql("SELECT id FROM communities WHERE host = 'c.example'"));
  storage::pg_connection connection(f.database.conninfo());
  storage::room_store rooms(connection, f.relay_key);
  std::int64_t now = std::time(nullptr) - 10; // the switch, at the wall clock, need not wait
  using o = protocol::room_outcome;
  REQUIRE(room_request(rooms, community, owner, 9007, {{"h", "pizza"}}, now) == o::changed);
  REQUIRE(room_request(rooms, community, owner, 9002, {{"h", "pizza"}, {"name", "Pizza"}}, now) == o::changed);
  REQUIRE(room_request(rooms, community, bob, 9021, {{"h", "pizza"}}, now) == o::changed);

  auto closed = f.admin_ok({"community", "set-access", "c.example", "closed", "--json"}).json();
  CHECK(closed.at("access").as_string() == "closed");
  CHECK(closed.at("room_events").as_int64() == 1); // pizza's 39002: bob held no room role
  auto members = f.admin_ok({"room", "members", "c.example", "pizza", "--json"}).json();
  REQUIRE(members.at("members").as_array().size() == 1);
  CHECK(members.at("members").as_array()[0].at("pubkey").as_string() == owner_hex);
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind = 39002 AND d_tag = 'pizza'"
              " AND position($1 in raw) > 0",
              {bob_hex})
        == "0");
  // Opening again changes only the flag; a key is still needed to run the command.
  auto opened = f.admin_ok({"community", "set-access", "c.example", "open", "--json"}).json();
  CHECK(opened.at("room_events").as_int64() == 0);
}
