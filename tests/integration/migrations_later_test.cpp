// SPDX-License-Identifier: MIT
// Migrations from 45 on: each applied to rows stored as the pods before it stored them.
#include <catch2/catch.hpp>

#include "support/migration_steps.hpp"
#include "support/pg_test_database.hpp"

using namespace comb;
using comb::test::insert_tagged;
using comb::test::migrated_up_to;
using comb::test::scalar;

TEST_CASE("migration 45: invites keep a chosen code's text beside its hash", "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* claims = &migrated_up_to(c, 45);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  scalar(c, "INSERT INTO invites (community_id, code_hash, expires_at) VALUES ($1::bigint, 'h', 9) RETURNING 1",
         {community});
  REQUIRE(c.exec_script(claims->sql).ok());
  CHECK(scalar(c, "SELECT count(*) FROM invites WHERE claim IS NULL") == "1"); // minted: hash only
}

TEST_CASE("migration 46: poll votes get the rooms of their poll, and lose them with themselves",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* borrowing = &migrated_up_to(c, 46);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string poll_hex(64, 'a');
  // A poll in the office, a vote naming it only (which borrowed nothing before), one with an h of
  // its own, and one naming a poll by a malformed id.
  insert_tagged(c, community, ("\\x" + poll_hex).c_str(), "{}", {{"h", "office"}});
  insert_tagged(c, community, "\\x0b", "{}", {{"e", poll_hex.c_str()}, {"response", "yes"}});
  insert_tagged(c, community, "\\x0c", "{}", {{"e", poll_hex.c_str()}, {"h", "lobby"}});
  insert_tagged(c, community, "\\x0d", "{}", {{"e", std::string(64, 'A').c_str()}});
  scalar(c, "UPDATE events SET kind = CASE WHEN id = decode($1, 'hex') THEN 1068 ELSE 1018 END RETURNING 1",
         {poll_hex});
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(borrowing->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',' ORDER BY event_id)"
                  " FROM event_tags WHERE name = 'room' AND kind = 1018") == "0b:office");
  scalar(c, "DELETE FROM events WHERE id = '\\x0b' RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'room' AND kind = 1018") == "0");
}

TEST_CASE("migration 47: pins get the rooms of the message they pin, and lose them with themselves",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* borrowing = &migrated_up_to(c, 47);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string message_hex(64, 'a');
  // A message in a private room, a pin naming it only (which borrowed nothing before), one with
  // an h of its own, and one that kept the room of a version it replaced.
  insert_tagged(c, community, ("\\x" + message_hex).c_str(), "{}", {{"h", "office"}});
  insert_tagged(c, community, "\\x0b", "{}", {{"d", "pin-1"}, {"e", message_hex.c_str()}});
  insert_tagged(c, community, "\\x0c", "{}", {{"d", "pin-2"}, {"e", message_hex.c_str()}, {"h", "lobby"}});
  insert_tagged(c, community, "\\x0d", "{}", {{"d", "pin-3"}, {"e", message_hex.c_str()}, {"room", "den"}});
  scalar(c, "UPDATE events SET kind = CASE WHEN id = decode($1, 'hex') THEN 9 ELSE 39067 END RETURNING 1",
         {message_hex});
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(borrowing->sql).ok());
  REQUIRE(c.exec_script(borrowing->sql).ok()); // a second run adds nothing
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',' ORDER BY event_id, value)"
                  " FROM event_tags WHERE name = 'room' AND kind = 39067") == "0b:office,0d:den,0d:office");
  scalar(c, "DELETE FROM events WHERE id IN ('\\x0b', '\\x0d') RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'room' AND kind = 39067") == "0");
}

TEST_CASE("migration 48: borrowers naming an address only get the rooms of its live version",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* by_address = &migrated_up_to(c, 48);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string author(64, 'a');
  // A calendar event in the office (its d holds a colon), stored again after a deletion of its
  // address (the deletion's own target is gone: it gets nothing from it); a pin naming it by
  // address only; a reaction with an h of its own; a pin naming an address with no live
  // version; one naming live room state.
  insert_tagged(c, community, "\\x0a", "{}", {{"d", "off:site"}, {"h", "office"}});
  scalar(c, "UPDATE events SET kind = 31923, d_tag = 'off:site', pubkey = decode($1, 'hex') RETURNING 1", {author});
  insert_tagged(c, community, "\\x09", "{}", {{"d", "office"}, {"h", "office"}});
  scalar(c, "UPDATE events SET kind = 39000, d_tag = 'office', pubkey = decode($1, 'hex') WHERE id = '\\x09'"
            " RETURNING 1", {author});
  const std::string meeting = "31923:" + author + ":off:site";
  insert_tagged(c, community, "\\x0b", "{}", {{"a", meeting.c_str()}, {"k", "31923"}});
  insert_tagged(c, community, "\\x0c", "{}", {{"d", "pin"}, {"a", meeting.c_str()}});
  insert_tagged(c, community, "\\x0d", "{}", {{"a", meeting.c_str()}, {"h", "lobby"}});
  insert_tagged(c, community, "\\x0e", "{}", {{"d", "pin-2"}, {"a", ("31923:" + author + ":gone").c_str()}});
  insert_tagged(c, community, "\\x0f", "{}", {{"d", "pin-3"}, {"a", ("39000:" + author + ":office").c_str()}});
  scalar(c, "UPDATE events SET kind = CASE id WHEN '\\x0b' THEN 5 WHEN '\\x0d' THEN 7 ELSE 39067 END"
            " WHERE id > '\\x0a' RETURNING 1");
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(by_address->sql).ok());
  REQUIRE(c.exec_script(by_address->sql).ok()); // a second run adds nothing
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',' ORDER BY event_id) FROM event_tags"
                  " WHERE name = 'room'") == "0b:office,0c:office");
  scalar(c, "DELETE FROM events WHERE id IN ('\\x0b', '\\x0c') RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'room'") == "0");
}

TEST_CASE("migration 49: tag rows copy what a read by tag checks of their event, and keep it exact",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* copies = &migrated_up_to(c, 49);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string raw = R"({"tags":[["e","root"],["p","someone"]]})";
  insert_tagged(c, community, "\\x0a", raw, {{"e", "root"}, {"p", "someone"}});
  scalar(c, "UPDATE events SET expires_at = 99, pubkey = '\\x0b0b' WHERE id = '\\x0a' RETURNING 1");
  // A tag row whose event is gone (a hand edit of its `raw` hid it from the deletion) would
  // now be read: it goes.
  insert_tagged(c, community, "\\x0d", "{}", {{"e", "root"}});
  scalar(c, "DELETE FROM events WHERE id = '\\x0d' RETURNING 1");
  REQUIRE(c.exec_script(copies->sql).ok());
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE event_id = '\\x0d'") == "0");
  CHECK(scalar(c, "SELECT string_agg(encode(pubkey, 'hex') || ':' || expires_at || ':' || size, ',')"
                  " FROM event_tags") == "0b0b:99:" + std::to_string(raw.size()) + ",0b0b:99:"
                                          + std::to_string(raw.size()));
  CHECK(test::tag_copies_disagreeing(db.conninfo()) == "0");
  // A row inserted without them (another writer, a pod of the release before) gets them.
  insert_tagged(c, community, "\\x0c", "{\"bb\":22}", {{"e", "root"}});
  CHECK(scalar(c, "SELECT size FROM event_tags WHERE event_id = '\\x0c'") == "9");
  // One naming no stored event is refused.
  CHECK_FALSE(c.exec("INSERT INTO event_tags VALUES ($1::bigint, '\\x0e', 'e', 'root', 7, 1)", {community}).ok());
  // A hand edit of the event row is followed.
  scalar(c, "UPDATE events SET raw = '{}', expires_at = NULL WHERE id = '\\x0a' RETURNING 1");
  CHECK(scalar(c, "SELECT string_agg(coalesce(expires_at::text, '-') || ':' || size, ',') FROM event_tags"
                  " WHERE event_id = '\\x0a'") == "-:2,-:2");
  CHECK(test::tag_copies_disagreeing(db.conninfo()) == "0");
  // The read by tag finds its rows, with their copies, in the index alone.
  CHECK(scalar(c, "SELECT indexdef FROM pg_indexes WHERE indexname = 'event_tags_value'").find(
          "INCLUDE (event_id, kind, pubkey, expires_at, size, version)") != std::string::npos);
}
