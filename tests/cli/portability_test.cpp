// SPDX-License-Identifier: MIT
// comb-admin export / import: JSONL round trips, bad lines, idempotence, closed communities.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/resource.h>
#include <sstream>

#include "cli_fixture.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/filter_json.hpp"
#include "protocol/kind_rules.hpp"
#include "protocol/nip19.hpp"
#include "protocol/room.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using namespace comb::test;

namespace {

/// A file in the fixture's private folder.
std::string file_in(const cli_fixture& f, const std::string& name) {
  return f.folder + "/" + name;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines,
                 const std::string& tail = "") {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& line : lines)
    out << line << '\n';
  out << tail;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::string json_of(const protocol::event& ev) {
  return protocol::render_event_json(ev);
}

std::string npub(const protocol::key_pair& key) {
  return protocol::encode_nip19("npub", key.public_key());
}

std::int64_t community_id(const cli_fixture& f, const std::string& host) {
  return std::stoll(f.sql("SELECT id FROM communities WHERE host = $1", {host}));
}

/// What a REQ with `filter_json` gets from `host`, minus the kinds a relay signs (those are
/// every relay's own), as the stored JSON of each event in reply order.
std::vector<std::string> req(const cli_fixture& f, const std::string& host,
                             const std::string& filter_json) {
  storage::pg_connection connection(f.database.conninfo());
  storage::event_store events(connection);
  auto filter = protocol::filter_from_json(boost::json::parse(filter_json), {});
  REQUIRE(filter);
  auto reply = events.query(community_id(f, host), {filter.value()}, unix_now(), 5000);
  REQUIRE(reply.ok);
  std::vector<std::string> kept;
  for (auto& json : reply.events)
    if (!protocol::relay_signed_kind(
          static_cast<std::uint32_t>(boost::json::parse(json).at("kind").as_int64())))
      kept.push_back(std::move(json));
  return kept;
}

/// The ids stored in `host` (hex), relay-signed kinds left out.
std::set<std::string> stored_ids(const cli_fixture& f, const std::string& host) {
  auto text = f.sql("SELECT string_agg(encode(id, 'hex'), ',') FROM events WHERE community_id = $1"
                    " AND NOT (kind IN (13534, 8000, 8001, 28935, 33534) OR kind BETWEEN 39000 AND 39005)",
                    {std::to_string(community_id(f, host))});
  std::set<std::string> ids;
  std::stringstream parts(text);
  for (std::string id; std::getline(parts, id, ',');)
    ids.insert(id);
  return ids;
}

std::set<std::string> ids_in_file(const std::string& path, bool relay_signed) {
  std::set<std::string> ids;
  for (const auto& line : read_lines(path)) {
    auto ev = boost::json::parse(line).as_object();
    auto kind = static_cast<std::uint32_t>(ev.at("kind").as_int64());
    if (protocol::relay_signed_kind(kind) == relay_signed)
      ids.insert(std::string(ev.at("id").as_string()));
  }
  return ids;
}

/// Stores `events` in `host` through the relay's writer, as accepted EVENTs would be.
void store(const cli_fixture& f, const std::string& host, const std::vector<protocol::event>& events) {
  storage::pg_connection connection(f.database.conninfo());
  storage::event_store store(connection);
  std::vector<storage::event_write> writes;
  const auto community = community_id(f, host);
  for (const auto& ev : events)
    writes.push_back({community, std::make_shared<const protocol::event>(ev),
                      std::make_shared<const std::string>(json_of(ev)), {}});
  for (const auto& outcome : store.store_batch(writes))
    REQUIRE(outcome.result == storage::store_outcome::status::stored);
}

std::int64_t count_of(const boost::json::object& result, const char* field) {
  return result.at(field).as_int64();
}

std::int64_t refused(const boost::json::object& result, const char* reason) {
  const auto& by_reason = result.at("refused").as_object();
  return by_reason.contains(reason) ? by_reason.at(reason).as_int64() : 0;
}

/// Applies a room request signed by `who` (jumping over seconds a room's state must wait for).
protocol::room_outcome room_request(storage::room_store& rooms, std::int64_t community,
                                    const protocol::key_pair& who, std::uint32_t kind,
                                    std::vector<protocol::tag> tags, std::int64_t& now) {
  auto ev = sign_event(who, kind, "", std::move(tags), now);
  auto request = protocol::parse_room_request(ev);
  REQUIRE(request);
  storage::room_command command{ev, protocol::render_event_json(ev), request.value()};
  for (;;) {
    auto write = rooms.apply(community, command, now);
    if (write.retry_at == 0)
      return write.outcome;
    now = write.retry_at;
  }
}

/// `room list` and, per room, `room members` of `host`, as comb-admin prints them (JSON).
std::string rooms_shown(const cli_fixture& f, const std::string& host) {
  auto list = f.admin_ok({"room", "list", host, "--json"}).json();
  std::string shown = boost::json::serialize(list.at("rooms"));
  for (const auto& room : list.at("rooms").as_array()) {
    auto id = std::string(room.at("id").as_string());
    shown += "\n" + id + ": "
             + boost::json::serialize(f.admin_ok({"room", "members", host, id, "--json"}).json().at("members"));
  }
  return shown;
}

const std::vector<std::string> round_trip_filters{
  R"({})",
  R"({"kinds":[1]})",
  R"({"kinds":[0]})",
  R"({"kinds":[30023]})",
  R"({"kinds":[5]})",
  R"({"#t":["hive"]})",
  R"({"kinds":[1],"limit":2})",
};

} // namespace

TEST_CASE("export then import into a fresh community keeps every event and every answer", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  f.admin_ok({"member", "add", "a.example", npub(alice)}); // relay-signed list and delta
  auto t = unix_now() - 1000;
  auto doomed = sign_event(alice, 1, "deleted later", {}, t + 1);
  store(f, "a.example", {
    sign_event(alice, 1, "first", {{"t", "hive"}}, t),
    doomed,
    sign_event(bob, 1, "second", {{"t", "hive"}, {"p", protocol::to_hex(alice.public_key())}}, t + 2),
    sign_event(alice, 0, R"({"name":"alice"})", {}, t + 3),
    sign_event(alice, 0, R"({"name":"alice 2"})", {}, t + 4),
    sign_event(bob, 30023, "v1", {{"d", "post"}}, t + 5),
    sign_event(bob, 30023, "v2", {{"d", "post"}}, t + 6),
    sign_event(alice, 5, "", {{"e", protocol::to_hex(doomed.id)}}, t + 7),
    sign_event(bob, 1, "protected", {{"-"}}, t + 8),
    sign_event(bob, 1, "expires later", {{"expiration", std::to_string(unix_now() + 3600)}}, t + 9),
  });
  auto file = file_in(f, "a.jsonl");
  auto exported = f.admin({"export", "a.example", "--out", file, "--json"});
  REQUIRE(exported.exit_code == 0);
  auto lines = read_lines(file);
  // The community's events as stored, plus the relay's own list, deltas and role definition.
  CHECK(count_of(exported.json(), "exported") == static_cast<std::int64_t>(lines.size()));
  std::int64_t previous = 0;
  for (const auto& line : lines) {
    auto created_at = boost::json::parse(line).at("created_at").as_int64();
    CHECK(created_at >= previous); // oldest first
    previous = created_at;
  }
  auto user_ids = ids_in_file(file, false);
  CHECK(user_ids.size() == 7); // 10 - the deleted one - the older kind 0 - the older 30023
  CHECK(user_ids == stored_ids(f, "a.example"));
  CHECK_FALSE(ids_in_file(file, true).empty());

  f.admin_ok({"community", "create", "b.example", "--owner", npub(owner)});
  auto imported = f.admin({"import", "b.example", "--in", file, "--json"});
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  auto result = imported.json();
  CHECK(count_of(result, "read") == static_cast<std::int64_t>(lines.size()));
  CHECK(count_of(result, "stored") == 7);
  CHECK(refused(result, "relay_signed") == static_cast<std::int64_t>(ids_in_file(file, true).size()));
  CHECK(count_of(result, "bad_lines") == 0);
  CHECK(stored_ids(f, "b.example") == user_ids);
  for (const auto& filter : round_trip_filters) {
    INFO("filter " << filter);
    CHECK(req(f, "b.example", filter) == req(f, "a.example", filter));
  }
  // The deleted event stays deleted in the target: the deletion came along.
  auto again_doomed = file_in(f, "doomed.jsonl");
  write_lines(again_doomed, {json_of(doomed)});
  auto refused_doomed = f.admin({"import", "b.example", "--in", again_doomed, "--json"});
  CHECK(refused(refused_doomed.json(), "deleted") == 1);

  SECTION("a second import stores nothing new") {
    auto second = f.admin({"import", "b.example", "--in", file, "--json"});
    REQUIRE(second.exit_code == 0);
    CHECK(count_of(second.json(), "stored") == 0);
    CHECK(count_of(second.json(), "duplicate") == 7);
    CHECK(stored_ids(f, "b.example") == user_ids);
  }
  SECTION("export takes --since, --until and --kinds") {
    auto part = file_in(f, "part.jsonl");
    f.admin_ok({"export", "a.example", "--out", part, "--since", std::to_string(t + 2),
                "--until", std::to_string(t + 8), "--kinds", "1,30023"});
    auto ids = ids_in_file(part, false);
    CHECK(ids.size() == 3); // bob's second, the protected note, the newest 30023
    CHECK(ids_in_file(part, true).empty());
    auto refused_overwrite = f.admin({"export", "a.example", "--out", part});
    CHECK(refused_overwrite.exit_code == 5);
    CHECK(read_lines(part).size() == 3);
  }
  SECTION("replacements are counted as such") {
    f.admin_ok({"community", "create", "c.example", "--owner", npub(owner)});
    auto older = file_in(f, "older.jsonl");
    write_lines(older, {json_of(sign_event(alice, 0, R"({"name":"old"})", {}, t))});
    f.admin_ok({"import", "c.example", "--in", older});
    auto newer = f.admin({"import", "c.example", "--in", file, "--json"});
    CHECK(count_of(newer.json(), "replaced") == 1);
    CHECK(count_of(newer.json(), "stored") == 7);
  }
}

TEST_CASE("bad lines are reported by number and skipped, --strict stops at the first", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  auto good = [&](int n) { return json_of(sign_event(alice, 1, "note " + std::to_string(n))); };
  auto forged = sign_event(alice, 1, "forged");
  forged.content = "changed after signing";
  auto bad_sig = sign_event(alice, 1, "bad sig");
  bad_sig.sig[0] ^= 1;
  auto path = file_in(f, "bad.jsonl");
  write_lines(path, {good(1), "not json at all", good(2), "", json_of(forged), json_of(bad_sig),
                     R"({"id":"00"})", good(3)},
              good(4).substr(0, 40)); // a truncated last line

  SECTION("skipped") {
    auto run = f.admin({"import", "a.example", "--in", path, "--json"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto result = run.json();
    CHECK(count_of(result, "read") == 8); // the blank line is not one
    CHECK(count_of(result, "stored") == 3);
    CHECK(count_of(result, "bad_lines") == 5);
    CHECK(boost::json::serialize(result.at("bad_line_numbers")) == "[2,5,6,7,9]");
    CHECK(refused(result, "invalid") == 2);
    CHECK(refused(result, "bad_signature") == 2);
    CHECK(refused(result, "truncated") == 1);
    CHECK_THAT(run.err, Catch::Contains("line 2: invalid: malformed JSON"));
    CHECK_THAT(run.err, Catch::Contains("line 5: invalid: event id does not match"));
    CHECK_THAT(run.err, Catch::Contains("line 6: invalid: signature verification failed"));
    CHECK_THAT(run.err, Catch::Contains("line 9: "));
    CHECK_THAT(run.err, Catch::Contains("truncated"));
    CHECK(stored_ids(f, "a.example").size() == 3);
  }
  SECTION("--strict stops at the first bad line, keeping the lines before it") {
    auto run = f.admin({"import", "a.example", "--in", path, "--strict", "--json"});
    CHECK(run.exit_code == 1);
    CHECK_THAT(run.err, Catch::Contains("stopped at line 2"));
    CHECK(count_of(run.json(), "stored") == 1);
    CHECK(stored_ids(f, "a.example").size() == 1);
  }
  SECTION("past a hundred, bad lines are counted, not listed") {
    auto noisy = file_in(f, "noisy.jsonl");
    write_lines(noisy, std::vector<std::string>(150, "{"));
    auto run = f.admin({"import", "a.example", "--in", noisy, "--json"});
    REQUIRE(run.exit_code == 0);
    CHECK(count_of(run.json(), "bad_lines") == 150);
    CHECK(run.json().at("bad_line_numbers").as_array().size() == 100);
    CHECK_THAT(run.err, Catch::Contains("line 100: "));
    CHECK_THAT(run.err, !Catch::Contains("line 101: "));
    CHECK_THAT(run.err, Catch::Contains("only the first 100 are shown"));
  }
  SECTION("--skip-signature-check still checks ids") {
    auto run = f.admin({"import", "a.example", "--in", path, "--skip-signature-check", "--json"});
    REQUIRE(run.exit_code == 0);
    CHECK(count_of(run.json(), "stored") == 4); // the bad signature passes, the forged id not
    CHECK(refused(run.json(), "bad_id") == 1);
  }
}

TEST_CASE("import never replays relay-signed events, requests or AUTH, and keeps the relay's bounds", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  std::vector<std::string> lines;
  for (std::uint32_t kind : {13534u, 8000u, 8001u, 33534u, 28935u, 39000u, 39005u})
    lines.push_back(json_of(sign_event(alice, kind, "", {{"d", "x"}})));
  for (std::uint32_t kind : {28934u, 28936u, 9000u, 9022u, 9030u, 9032u})
    lines.push_back(json_of(sign_event(alice, kind, "")));
  lines.push_back(json_of(sign_event(alice, 22242, "")));
  lines.push_back(json_of(sign_event(alice, 20001, "ephemeral")));
  lines.push_back(json_of(sign_event(alice, 1, "gone", {{"expiration", "1000"}})));
  lines.push_back(json_of(sign_event(alice, 1, "future", {}, unix_now() + 7200)));
  lines.push_back(json_of(sign_event(alice, 1, "kept")));
  auto path = file_in(f, "kinds.jsonl");
  write_lines(path, lines);
  auto run = f.admin({"import", "a.example", "--in", path, "--json"},
                     {{"COMB_MAX_CONTENT_BYTES", "100000"}});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  auto result = run.json();
  CHECK(refused(result, "relay_signed") == 7);
  CHECK(refused(result, "state_request") == 6);
  CHECK(refused(result, "auth") == 1);
  CHECK(refused(result, "ephemeral") == 1);
  CHECK(refused(result, "expired") == 1);
  CHECK(refused(result, "created_at") == 1);
  CHECK(count_of(result, "bad_lines") == 0);
  CHECK(count_of(result, "stored") == 1);
  CHECK(f.sql("SELECT count(*) FROM events WHERE pubkey = $1::bytea",
              {"\\x" + protocol::to_hex(alice.public_key())}) == "1");

  SECTION("bans hold for imported events as for live ones") {
    auto mallory = protocol::key_pair::generate();
    auto banned_note = sign_event(alice, 1, "banned note");
    (void)f.sql("INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, $2::bytea)",
                {std::to_string(community_id(f, "a.example")), "\\x" + protocol::to_hex(mallory.public_key())});
    (void)f.sql("INSERT INTO banned_events (community_id, event_id) VALUES ($1::bigint, $2::bytea)",
                {std::to_string(community_id(f, "a.example")), "\\x" + protocol::to_hex(banned_note.id)});
    auto banned = file_in(f, "banned.jsonl");
    write_lines(banned, {json_of(sign_event(mallory, 1, "from a banned author")), json_of(banned_note)});
    auto banned_run = f.admin({"import", "a.example", "--in", banned, "--json"});
    REQUIRE(banned_run.exit_code == 0);
    CHECK(refused(banned_run.json(), "banned") == 2);
    CHECK(count_of(banned_run.json(), "stored") == 0);
  }
  SECTION("the relay's size bound, read from its settings") {
    auto big = file_in(f, "big.jsonl");
    write_lines(big, {json_of(sign_event(alice, 1, std::string(2000, 'x')))});
    auto refused_big = f.admin({"import", "a.example", "--in", big, "--json"},
                               {{"COMB_MAX_CONTENT_BYTES", "1000"}});
    CHECK(refused(refused_big.json(), "invalid") == 1);
    CHECK_THAT(refused_big.err, Catch::Contains("line 1: "));
    auto too_long = f.admin({"import", "a.example", "--in", big, "--json"},
                            {{"COMB_MAX_MESSAGE_BYTES", "1024"}});
    CHECK(refused(too_long.json(), "too_large") == 1);
    auto bad_setting = f.admin({"import", "a.example", "--in", big},
                               {{"COMB_MAX_MESSAGE_BYTES", "ten"}});
    CHECK(bad_setting.exit_code == 1);
    CHECK_THAT(bad_setting.err, Catch::Contains("MAX_MESSAGE_BYTES"));
  }
}

TEST_CASE("a closed community imports members' events only, --members-from-list adds the list's members", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  auto other_relay = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "c.example", "--owner", npub(owner), "--closed"});
  auto t = unix_now() - 100;
  auto path = file_in(f, "closed.jsonl");
  write_lines(path, {
    json_of(sign_event(other_relay, 13534, "", {{"-"}, {"member", protocol::to_hex(bob.public_key())}}, t)),
    json_of(sign_event(alice, 1, "alice's", {}, t + 1)),
    json_of(sign_event(bob, 1, "bob's", {}, t + 2)),
    // The newest list wins: it names alice, with another relay's role id.
    json_of(sign_event(other_relay, 13534, "", {{"-"}, {"member", protocol::to_hex(alice.public_key()), "moderator"}}, t + 3)),
  });

  SECTION("members only") {
    auto run = f.admin({"import", "c.example", "--in", path, "--json"});
    REQUIRE(run.exit_code == 0);
    CHECK(refused(run.json(), "not_a_member") == 2);
    CHECK(count_of(run.json(), "stored") == 0);
  }
  SECTION("--any-author") {
    auto run = f.admin({"import", "c.example", "--in", path, "--any-author", "--json"});
    REQUIRE(run.exit_code == 0);
    CHECK(count_of(run.json(), "stored") == 2);
  }
  SECTION("--members-from-list") {
    auto run = f.admin({"import", "c.example", "--in", path, "--members-from-list", "--json"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto result = run.json();
    CHECK(count_of(result, "members_added") == 1);
    CHECK(count_of(result, "stored") == 1); // alice's; bob was only on the older list
    CHECK(refused(result, "not_a_member") == 1);
    CHECK(refused(result, "relay_signed") == 2);
    auto alice_hex = protocol::to_hex(alice.public_key());
    CHECK(f.stored("c.example").contains({alice_hex, "member"}));
    CHECK(f.listed("c.example") == f.stored("c.example")); // list written with the change
    CHECK(f.sql("SELECT count(*) FROM events WHERE kind = 8000 AND pubkey = $1::bytea",
                {"\\x" + protocol::to_hex(f.relay_key.public_key())}) == "2"); // owner, alice
    auto again = f.admin({"import", "c.example", "--in", path, "--members-from-list", "--json"});
    REQUIRE(again.exit_code == 0);
    CHECK(count_of(again.json(), "members_added") == 0);
    CHECK(count_of(again.json(), "stored") == 0);
  }
  SECTION("--members-from-list with an input that holds no list adds nobody") {
    auto run = f.admin({"import", "c.example", "--members-from-list"}); // stdin is /dev/null
    CHECK(run.exit_code == 0);
    CHECK_THAT(run.err, Catch::Contains("no valid 13534"));
    CHECK(f.stored("c.example").size() == 1);
  }
}

TEST_CASE("export then import --rooms-from-state moves a community's rooms, members, roles and pins", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  auto carol = protocol::key_pair::generate(); // never a member
  auto hex = [](const protocol::key_pair& k) { return protocol::to_hex(k.public_key()); };
  f.admin_ok({"community", "create", "from.example", "--owner", npub(owner), "--closed"});
  f.admin_ok({"member", "add", "from.example", hex(alice)});
  f.admin_ok({"member", "add", "from.example", hex(bob)});
  storage::pg_connection connection(f.database.conninfo());
  storage::room_store rooms(connection, f.relay_key);
  std::int64_t now = unix_now();
  using o = protocol::room_outcome;
  const auto from = community_id(f, "from.example");
  REQUIRE(room_request(rooms, from, owner, 9007, {{"h", "pizza"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9002, {{"h", "pizza"}, {"name", "Pizza"}, {"about", "hot"}, {"private"}, {"closed"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9000, {{"h", "pizza"}, {"p", hex(alice), "moderator"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9000, {{"h", "pizza"}, {"p", hex(bob)}}, now) == o::changed);
  auto pinned = sign_event(bob, 1, "pinned", {{"h", "pizza"}}, now);
  REQUIRE(room_request(rooms, from, owner, 9010, {{"h", "pizza"}, {"e", protocol::to_hex(pinned.id)}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, owner, 9007, {{"h", "pasta"}}, now) == o::changed);
  REQUIRE(room_request(rooms, from, bob, 9021, {{"h", "pasta"}}, now) == o::changed);

  auto path = file_in(f, "rooms.jsonl");
  f.admin_ok({"export", "from.example", "--out", path});
  f.admin_ok({"community", "create", "to.example", "--owner", npub(owner), "--closed"});
  auto run = f.admin({"import", "to.example", "--in", path, "--members-from-list", "--rooms-from-state", "--json"});
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
              {std::to_string(to), "\\x" + protocol::to_hex(f.relay_key.public_key())})
        == "8");
  CHECK(f.sql("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39005"
              " AND d_tag = 'pizza' AND position($2 in raw) > 0",
              {std::to_string(to), protocol::to_hex(pinned.id)})
        == "1");

  // Access follows the moved rooms: alice moderates pizza, bob is in it, carol cannot join.
  REQUIRE(room_request(rooms, to, alice, 9001, {{"h", "pizza"}, {"p", hex(bob)}}, now) == o::changed);
  CHECK(room_request(rooms, to, bob, 9000, {{"h", "pasta"}, {"p", hex(alice)}}, now) == o::not_allowed);
  CHECK(room_request(rooms, to, carol, 9021, {{"h", "pasta"}}, now) == o::not_in_community);
  CHECK(room_request(rooms, to, bob, 9021, {{"h", "pizza"}}, now) == o::invite_required);

  auto again = f.admin({"import", "to.example", "--in", path, "--rooms-from-state", "--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(count_of(again.json(), "rooms_created") == 0);
}

TEST_CASE("import --rooms-from-state takes only the file's relay's state and a closed community's members", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto stranger = protocol::key_pair::generate();
  auto other_relay = protocol::key_pair::generate();
  auto hex = [](const protocol::key_pair& k) { return protocol::to_hex(k.public_key()); };
  f.admin_ok({"community", "create", "c.example", "--owner", npub(owner), "--closed"});
  f.admin_ok({"member", "add", "c.example", hex(alice)});
  auto t = unix_now() - 100;
  auto path = file_in(f, "state.jsonl");
  write_lines(path, {
    json_of(sign_event(other_relay, 13534, "", {{"-"}, {"member", hex(alice)}}, t)),
    json_of(sign_event(other_relay, 39000, "", {{"d", "den"}, {"name", "Den"}}, t)),
    json_of(sign_event(other_relay, 39002, "", {{"d", "den"}, {"p", hex(alice)}, {"p", hex(stranger)}}, t)),
    json_of(sign_event(other_relay, 39001, "", {{"d", "den"}, {"p", hex(stranger), "admin"}}, t)),
    // Anyone's key but the list's: not room state.
    json_of(sign_event(stranger, 39000, "", {{"d", "forged"}, {"name", "Forged"}}, t)),
    json_of(sign_event(stranger, 39002, "", {{"d", "den"}, {"p", hex(stranger)}}, t + 1)),
  });
  auto run = f.admin({"import", "c.example", "--in", path, "--rooms-from-state", "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(count_of(run.json(), "rooms_created") == 1);
  CHECK(count_of(run.json(), "room_members_left_out") == 1); // the stranger: not a member here
  auto list = f.admin_ok({"room", "list", "c.example", "--json"}).json();
  REQUIRE(list.at("rooms").as_array().size() == 1);
  CHECK(list.at("rooms").as_array()[0].at("id").as_string() == "den");
  auto members = f.admin_ok({"room", "members", "c.example", "den", "--json"}).json().at("members").as_array();
  REQUIRE(members.size() == 1);
  CHECK(members[0].at("pubkey").as_string() == hex(alice));
  CHECK(members[0].at("roles").as_array().empty());
}

TEST_CASE("two imports of one file at once store each event once and the newest versions win", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  std::vector<protocol::key_pair> authors;
  for (int i = 0; i < 4; ++i)
    authors.push_back(protocol::key_pair::generate());
  auto t = unix_now() - 5000;
  std::vector<std::string> lines;
  auto author_of = [&](int i) -> std::size_t {
    // Every tenth line is a new version of one author's profile and addressable post, in turn.
    return static_cast<std::size_t>(i % 10 == 0 ? i / 10 : i) % authors.size();
  };
  for (int i = 0; i < 1500; ++i) {
    const auto& who = authors[author_of(i)];
    if (i % 10 == 0) {
      lines.push_back(json_of(sign_event(who, 0, "profile " + std::to_string(i), {}, t + i)));
      lines.push_back(json_of(sign_event(who, 30023, "post " + std::to_string(i), {{"d", "post"}}, t + i)));
    } else {
      lines.push_back(json_of(sign_event(who, 1, "note " + std::to_string(i), {}, t + i)));
    }
  }
  auto path = file_in(f, "both.jsonl");
  write_lines(path, lines);
  // Small batches, so the two runs' transactions interleave many times.
  std::string one_run = "COMB_DATABASE_URL='" + f.database.conninfo() + "' " COMB_ADMIN_BIN
                        " import a.example --batch 20 --json --in '" + path + "'";
  std::string both = "cd '" + f.folder + "' && (" + one_run + " > first.json 2>first.err & "
                     + one_run + " > second.json 2>second.err & wait)";
  REQUIRE(std::system(both.c_str()) == 0);
  auto result_of = [&](const char* name) {
    std::ifstream in(f.folder + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    INFO(name << ": " << text.str());
    return boost::json::parse(text.str()).as_object();
  };
  auto first = result_of("first.json");
  auto second = result_of("second.json");
  CHECK(first.at("ok").as_bool());
  CHECK(second.at("ok").as_bool());
  const std::int64_t lines_total = static_cast<std::int64_t>(lines.size());
  // Each event is stored by exactly one run; the other finds it (or a newer version) there.
  CHECK(count_of(first, "stored") + count_of(second, "stored")
        + count_of(first, "duplicate") + count_of(second, "duplicate") == 2 * lines_total);
  CHECK(count_of(first, "stored") + count_of(second, "stored") <= lines_total);
  // Whatever the interleaving: every note, and only the newest profile and post of each author.
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind = 1") == "1350");
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind IN (0, 30023)") == "8");
  auto last_profile_at = [&](std::size_t author_index) {
    std::int64_t at = 0;
    for (int i = 0; i < 1500; i += 10)
      if (author_of(i) == author_index)
        at = t + i;
    return at;
  };
  for (std::size_t a = 0; a < authors.size(); ++a)
    for (const char* kind : {"0", "30023"}) {
      INFO("author " << a << " kind " << kind);
      auto stored_at = f.sql("SELECT string_agg(created_at::text, ',') FROM events"
                             " WHERE kind = $1::int AND pubkey = $2::bytea",
                             {kind, "\\x" + protocol::to_hex(authors[a].public_key())});
      CHECK(stored_at == std::to_string(last_profile_at(a)));
    }
}

TEST_CASE("export and import hold a bounded share of what they move", "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  // 94 MiB of events, written one at a time so this process stays small: a child's peak memory
  // (RUSAGE_CHILDREN) starts from its parent's when it is spawned.
  constexpr int count = 6000;
  const std::string content(16 * 1024, 'x');
  auto t = unix_now() - 10000;
  auto path = file_in(f, "big.jsonl");
  {
    std::ofstream out(path);
    for (int i = 0; i < count; ++i)
      out << json_of(sign_event(alice, 1, content + std::to_string(i), {}, t + i / 500)) << '\n';
  }
  auto peak_kib = [] {
    rusage usage{};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    return usage.ru_maxrss;
  };
  auto imported = f.admin({"import", "a.example", "--in", path, "--json"});
  REQUIRE(imported.exit_code == 0);
  CHECK(count_of(imported.json(), "stored") == count);
  // Holding the file would take over 94 MiB; batches of 500 such events, about 80 MiB.
  CHECK(peak_kib() < 64 * 1024); // batches are bounded in bytes too, not only in events
  auto exported = file_in(f, "exported.jsonl");
  f.admin_ok({"export", "a.example", "--out", exported});
  CHECK(std::filesystem::file_size(exported) > 94u * 1024 * 1024);
  CHECK(peak_kib() < 64 * 1024); // one cursor page at a time
}
