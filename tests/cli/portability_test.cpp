// SPDX-License-Identifier: MIT
// comb-admin export / import: JSONL round trips, bad lines, idempotence, closed communities.
#include "portability_support.hpp"

using namespace comb;
using namespace comb::test;
using namespace comb::test_portability;

namespace {

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

TEST_CASE("a request to vanish travels with the export, and the target refuses what it deleted", "[cli][portability][nip62]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  auto t = unix_now() - 1000;
  auto gone = sign_event(alice, 1, "forget me", {}, t);
  auto stays = sign_event(bob, 1, "still here", {}, t + 1);
  store(f, "a.example", {gone, stays});
  auto request = sign_event(alice, 62, "", {{"relay", "ALL_RELAYS"}}, t + 2);
  {
    storage::pg_connection connection(f.database.conninfo());
    storage::event_store events(connection);
    auto outcome = events.store_batch(std::vector<storage::event_write>{
      {community_id(f, "a.example"), std::make_shared<const protocol::event>(request),
       std::make_shared<const std::string>(json_of(request)), {}}});
    REQUIRE(outcome.front().result == storage::store_outcome::status::applied);
  }
  auto file = file_in(f, "a.jsonl");
  f.admin_ok({"export", "a.example", "--out", file});
  auto lines = read_lines(file);
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back() == json_of(request)); // after the events, as signed
  CHECK(ids_in_file(file, false) == std::set<std::string>{protocol::to_hex(stays.id), protocol::to_hex(request.id)});

  f.admin_ok({"community", "create", "b.example", "--owner", npub(owner)});
  auto imported = f.admin({"import", "b.example", "--in", file, "--json"});
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK(count_of(imported.json(), "vanished") == 1);
  auto again = file_in(f, "gone.jsonl");
  write_lines(again, {json_of(gone)});
  CHECK(refused(f.admin({"import", "b.example", "--in", again, "--json"}).json(), "vanished") == 1);
  // An export of other kinds leaves the requests out.
  auto notes = file_in(f, "notes.jsonl");
  f.admin_ok({"export", "a.example", "--out", notes, "--kinds", "1"});
  CHECK(read_lines(notes) == std::vector<std::string>{json_of(stays)});
}

TEST_CASE("an import counts what its own lines replace or delete as stored, and deletions of others' events as not kept",
          "[cli][portability]") {
  cli_fixture f;
  auto owner = protocol::key_pair::generate();
  auto alice = protocol::key_pair::generate();
  auto bob = protocol::key_pair::generate();
  f.admin_ok({"community", "create", "a.example", "--owner", npub(owner)});
  auto t = unix_now() - 1000;
  auto note = sign_event(bob, 1, "bob's", {}, t);
  auto file = file_in(f, "a.jsonl");
  write_lines(file, {json_of(sign_event(alice, 0, R"({"name":"old"})", {}, t)),
                     json_of(sign_event(alice, 0, R"({"name":"new"})", {}, t + 1)), json_of(note),
                     json_of(sign_event(alice, 5, "", {{"e", protocol::to_hex(note.id)}}, t + 2))});
  auto imported = f.admin({"import", "a.example", "--in", file, "--json"});
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK(count_of(imported.json(), "stored") == 3);
  CHECK(count_of(imported.json(), "replaced") == 1);
  CHECK(count_of(imported.json(), "vanished") == 0);
  CHECK(refused(imported.json(), "not kept") == 1);
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
  // 19004 too: Flotilla reads a grant of room creation from any author.
  for (std::uint32_t kind : {13534u, 8000u, 8001u, 33534u, 28935u, 39000u, 39005u, 19004u})
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
  CHECK(refused(result, "relay_signed") == 8);
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
    auto run = f.admin({"import", "c.example", "--in", path, "--members-from-list", "--list-author",
                        npub(other_relay), "--json"});
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
                {"\\x" + protocol::to_hex(f.signer("c.example").public_key())}) == "2"); // owner, alice
    auto again = f.admin({"import", "c.example", "--in", path, "--members-from-list", "--list-author",
                          npub(other_relay), "--json"});
    REQUIRE(again.exit_code == 0);
    CHECK(count_of(again.json(), "members_added") == 0);
    CHECK(count_of(again.json(), "stored") == 0);
  }
  SECTION("--members-from-list with an input that holds no list adds nobody, and says so") {
    // stdin is /dev/null
    auto run = f.admin({"import", "c.example", "--members-from-list", "--list-author", npub(other_relay)});
    CHECK(run.exit_code == 1);
    CHECK_THAT(run.err, Catch::Contains("no valid 13534"));
    CHECK(f.stored("c.example").size() == 1);
  }
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
