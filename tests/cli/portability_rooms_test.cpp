// SPDX-License-Identifier: MIT
// comb-admin export / import of a community's rooms (--rooms-from-state).
#include "portability_support.hpp"

using namespace comb;
using namespace comb::test;
using namespace comb::test_portability;

TEST_CASE("export then import --rooms-from-state moves a community's rooms, members, roles and pins", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  auto carol = protocol::key_pair::generate(); // never a member
  f.admin_ok({"community", "create", "from.example", "--owner", npub(owner), "--closed"});
  f.admin_ok({"member", "add", "from.example", hex_of(alice)});
  f.admin_ok({"member", "add", "from.example", hex_of(bob)});
  storage::pg_connection connection(f.database.conninfo());
  storage::room_store rooms(connection, f.relay_key);
  std::int64_t now = unix_now();
  using o = protocol::room_outcome;
  const auto from = community_id(f, "from.example");
  REQUIRE(room_request(rooms, from, owner, 9007, {{"h", "pizza"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9002, {{"h", "pizza"}, {"name", "Pizza"}, {"about", "hot"}, {"private"}, {"closed"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9000, {{"h", "pizza"}, {"p", hex_of(alice), "moderator"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9000, {{"h", "pizza"}, {"p", hex_of(bob)}}, now) == o::changed);
  auto pinned = sign_event(bob, 1, "pinned", {{"h", "pizza"}}, now);
  REQUIRE(room_request(rooms, from, owner, 9010, {{"h", "pizza"}, {"e", protocol::to_hex(pinned.id)}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9007, {{"h", "pasta"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9002, {{"h", "pasta"}, {"name", "Pasta"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, bob, 9021, {{"h", "pasta"}}, now) == o::changed);

  auto path = file_in(f, "rooms.jsonl");
  f.admin_ok({"export", "from.example", "--out", path});
  f.admin_ok({"community", "create", "to.example", "--owner", npub(owner), "--closed"});
  const auto old_relay = protocol::to_hex(f.signer("from.example").public_key()); // its NIP-11 self
  auto run = f.admin({"import", "to.example", "--in", path, "--members-from-list", "--rooms-from-state",
                      "--list-author", old_relay, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(count_of(run.json(), "rooms_created") == 2);
  CHECK(count_of(run.json(), "room_members_left_out") == 0);
  CHECK(rooms_shown(f, "to.example") == rooms_shown(f, "from.example"));
  const auto to = community_id(f, "to.example");
  auto about = [&f](std::int64_t community) {
    return f.sql("SELECT string_agg(room_id || ':' || name || ':' || about || ':' || picture, ','"
                 " ORDER BY room_id) FROM rooms WHERE community_id = $1::bigint",
                 {std::to_string(community)});
  };
  CHECK(about(to) == about(from));
  // Each room's state is the relay's own, written once per kind, and the pins came along.
  CHECK(f.sql("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind IN (39000, 39001, 39002, 39003)"
              " AND pubkey = $2::bytea",
              {std::to_string(to), "\\x" + protocol::to_hex(f.signer("to.example").public_key())})
        == "8");
  CHECK(f.sql("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39005"
              " AND d_tag = 'pizza' AND position($2 in raw) > 0",
              {std::to_string(to), protocol::to_hex(pinned.id)})
        == "1");

  // Access follows the moved rooms: alice moderates pizza, bob is in it, carol cannot join.
  REQUIRE(room_request(rooms, to, alice, 9001, {{"h", "pizza"}, {"p", hex_of(bob)}}, now) == o::changed);
  CHECK(room_request(rooms, to, bob, 9000, {{"h", "pasta"}, {"p", hex_of(alice)}}, now) == o::not_allowed);
  CHECK(room_request(rooms, to, carol, 9021, {{"h", "pasta"}}, now) == o::not_in_community);
  CHECK(room_request(rooms, to, bob, 9021, {{"h", "pizza"}}, now) == o::invite_required);

  auto again = f.admin({"import", "to.example", "--in", path, "--rooms-from-state", "--list-author", old_relay, "--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(count_of(again.json(), "rooms_created") == 0);
}

TEST_CASE("import --rooms-from-state takes only the file's relay's state and a closed community's members", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto stranger = protocol::key_pair::generate();
  auto other_relay = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "c.example", "--owner", npub(owner), "--closed"});
  f.admin_ok({"member", "add", "c.example", hex_of(alice)});
  auto t = unix_now() - 100;
  auto path = file_in(f, "state.jsonl");
  write_lines(path, {
    json_of(sign_event(other_relay, 13534, "", {{"-"}, {"member", hex_of(alice)}}, t)),
    json_of(sign_event(other_relay, 39000, "", {{"d", "den"}, {"name", "Den"}}, t)),
    json_of(sign_event(other_relay, 39002, "", {{"d", "den"}, {"p", hex_of(alice)}, {"p", hex_of(stranger)}}, t)),
    json_of(sign_event(other_relay, 39001, "", {{"d", "den"}, {"p", hex_of(stranger), "admin"}}, t)),
    // Anyone's key but the list's: not room state.
    json_of(sign_event(stranger, 39000, "", {{"d", "forged"}, {"name", "Forged"}}, t)),
    json_of(sign_event(stranger, 39002, "", {{"d", "den"}, {"p", hex_of(stranger)}}, t + 1)),
  });
  auto run = f.admin({"import", "c.example", "--in", path, "--rooms-from-state", "--list-author", hex_of(other_relay), "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(count_of(run.json(), "rooms_created") == 1);
  CHECK(count_of(run.json(), "room_members_left_out") == 1); // the stranger: not a member here
  auto list = f.admin_ok({"room", "list", "c.example", "--json"}).json();
  REQUIRE(list.at("rooms").as_array().size() == 1);
  CHECK(list.at("rooms").as_array()[0].at("id").as_string() == "den");
  auto members = f.admin_ok({"room", "members", "c.example", "den", "--json"}).json().at("members").as_array();
  REQUIRE(members.size() == 1);
  CHECK(members[0].at("pubkey").as_string() == hex_of(alice));
  CHECK(members[0].at("roles").as_array().empty());
}

TEST_CASE("import --rooms-from-state leaves out whoever is banned from the community", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto banned = protocol::key_pair::generate();
  auto old_relay = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "open.example", "--owner", npub(owner)});
  (void)f.sql("INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, $2::bytea)",
              {std::to_string(community_id(f, "open.example")), "\\x" + hex_of(banned)});
  auto t = unix_now() - 100;
  auto path = file_in(f, "state.jsonl");
  write_lines(path, {
    json_of(sign_event(old_relay, 13534, "", {{"-"}, {"member", hex_of(alice)}}, t)),
    json_of(sign_event(old_relay, 39000, "", {{"d", "den"}, {"name", "Den"}}, t)),
    json_of(sign_event(old_relay, 39002, "", {{"d", "den"}, {"p", hex_of(alice)}, {"p", hex_of(banned)}}, t)),
  });
  auto run = f.admin({"import", "open.example", "--in", path, "--rooms-from-state", "--list-author", npub(old_relay), "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(count_of(run.json(), "rooms_created") == 1);
  CHECK(count_of(run.json(), "room_members_left_out") == 1);
  auto members = f.admin_ok({"room", "members", "open.example", "den", "--json"}).json().at("members").as_array();
  REQUIRE(members.size() == 1);
  CHECK(members[0].at("pubkey").as_string() == hex_of(alice));
}

TEST_CASE("import takes the members and rooms of the relay named, never of whoever signs the newest list", "[cli][portability]") {
  // strfry and nostr-rs-relay keep any kind from anyone: a stranger may publish a newer 13534,
  // and room state of their own, to the relay the file comes from.
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto stranger = protocol::key_pair::generate();
  auto other_relay = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "c.example", "--owner", npub(owner), "--closed"});
  auto t = unix_now() - 100;
  auto path = file_in(f, "forged.jsonl");
  write_lines(path, {
    json_of(sign_event(other_relay, 13534, "", {{"-"}, {"member", hex_of(alice)}}, t)),
    json_of(sign_event(other_relay, 39000, "", {{"d", "den"}, {"name", "Den"}}, t)),
    json_of(sign_event(other_relay, 39002, "", {{"d", "den"}, {"p", hex_of(alice)}}, t)),
    json_of(sign_event(stranger, 13534, "", {{"-"}, {"member", hex_of(stranger)}}, t + 5)),
    json_of(sign_event(stranger, 39000, "", {{"d", "forged"}, {"name", "Forged"}}, t + 5)),
    json_of(sign_event(stranger, 39002, "", {{"d", "forged"}, {"p", hex_of(stranger)}}, t + 5)),
    // Dated ahead of the relay's window: a list that would stay the newest.
    json_of(sign_event(other_relay, 13534, "", {{"-"}, {"member", hex_of(stranger)}}, unix_now() + 3600)),
  });
  for (const char* flag : {"--members-from-list", "--rooms-from-state"}) {
    auto guessed = f.admin({"import", "c.example", "--in", path, flag});
    CHECK(guessed.exit_code == 1);
    CHECK_THAT(guessed.err, Catch::Contains("--list-author") && Catch::Contains(npub(stranger))
                              && Catch::Contains(npub(other_relay)));
  }
  // A relay that signs no list of its own (strfry) leaves one author in the file, a stranger:
  // still not taken. Nor is a key that signed no list in the file.
  auto stranger_only = file_in(f, "stranger.jsonl");
  write_lines(stranger_only, {json_of(sign_event(stranger, 13534, "", {{"-"}, {"member", hex_of(stranger)}}, t))});
  CHECK(f.admin({"import", "c.example", "--in", stranger_only, "--members-from-list"}).exit_code == 1);
  auto unlisted = f.admin({"import", "c.example", "--in", stranger_only, "--members-from-list", "--list-author",
                           npub(other_relay)});
  CHECK(unlisted.exit_code == 1);
  CHECK_THAT(unlisted.err, Catch::Contains("no valid 13534 list of " + npub(other_relay)));
  CHECK(f.stored("c.example").size() == 1); // the owner
  CHECK(f.admin_ok({"room", "list", "c.example", "--json"}).json().at("rooms").as_array().empty());

  auto run = f.admin({"import", "c.example", "--in", path, "--members-from-list", "--rooms-from-state",
                      "--list-author", npub(other_relay), "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(count_of(run.json(), "members_added") == 1);
  CHECK(run.json().at("list_author").as_string() == hex_of(other_relay));
  auto stored = f.stored("c.example");
  CHECK(stored.contains({hex_of(alice), "member"}));
  CHECK_FALSE(stored.contains({hex_of(stranger), "member"}));
  auto rooms = f.admin_ok({"room", "list", "c.example", "--json"}).json().at("rooms").as_array();
  REQUIRE(rooms.size() == 1);
  CHECK(rooms[0].at("id").as_string() == "den");
}

TEST_CASE("an import refuses an event naming more than 16 rooms, as the relay does", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  std::vector<protocol::tag> rooms;
  for (int i = 0; i < 17; ++i)
    rooms.push_back({"h", "room" + std::to_string(i)});
  auto path = file_in(f, "rooms.jsonl");
  write_lines(path, {json_of(sign_event(alice, 1, "in seventeen rooms", rooms)),
                     json_of(sign_event(alice, 1, "in the general room", {{"h", "_"}}))});
  auto run = f.admin({"import", "a.example", "--in", path, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(refused(run.json(), "too_many_rooms") == 1);
  CHECK(count_of(run.json(), "stored") == 1);
}

TEST_CASE("an import refuses an event posted to a room the community does not have, as the relay does",
          "[cli][portability]") {
  // Exported from a community with a private room, imported without --rooms-from-state: stored,
  // its messages would be read by anyone here, as no room of this community hides them.
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  auto path = file_in(f, "private.jsonl");
  write_lines(path, {json_of(sign_event(alice, 9, "said in a private room", {{"h", "secret"}})),
                     json_of(sign_event(alice, 1, "said to everyone"))});
  auto run = f.admin({"import", "a.example", "--in", path, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(refused(run.json(), "no_such_room") == 1);
  CHECK(count_of(run.json(), "stored") == 1);
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind = 9") == "0");
}
