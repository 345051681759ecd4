// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "storage/filter_sql.hpp"
#include "storage/migrations.hpp"
#include "support/migration_steps.hpp"
#include "support/pg_test_database.hpp"

using namespace comb;
using comb::test::insert_tagged;
using comb::test::migrated_up_to;
using comb::test::scalar;

namespace {

std::string applied_versions(storage::pg_connection& c) {
  return scalar(c, "SELECT count(*) || ':' || coalesce(max(version), 0) FROM schema_migrations");
}

std::string expected_versions() {
  auto all = storage::all_migrations();
  return std::to_string(all.size()) + ':' + std::to_string(all.back().version);
}

} // namespace

TEST_CASE("migrations create the schema and are idempotent", "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  CHECK(applied_versions(c) == expected_versions());
  REQUIRE_FALSE(storage::apply_migrations(c));
  CHECK(applied_versions(c) == expected_versions());
  for (const char* table : {"communities", "community_hosts", "events", "event_tags",
                            "deleted_events", "deleted_addresses"})
    CHECK(scalar(c, "SELECT to_regclass($1)::text", {std::string(table)}) == table);
  CHECK(scalar(c, "SELECT attcompression FROM pg_attribute"
                  " WHERE attrelid = 'events'::regclass AND attname = 'raw'") == "l");
  // The rerun created nothing, so the server said nothing on stderr either.
  CHECK(c.take_notices().size() <= 1); // at most "schema_migrations already exists, skipping"
}

TEST_CASE("two connections migrating at once apply each version once",
          "[integration][migrations]") {
  test::fresh_database db;
  std::optional<std::string> first_error = "not run";
  std::optional<std::string> second_error = "not run";
  {
    std::jthread first([&] {
      storage::pg_connection c(db.conninfo());
      first_error = storage::apply_migrations(c);
    });
    std::jthread second([&] {
      storage::pg_connection c(db.conninfo());
      second_error = storage::apply_migrations(c);
    });
  }
  CHECK(first_error.value_or("") == "");
  CHECK(second_error.value_or("") == "");
  storage::pg_connection c(db.conninfo());
  CHECK(applied_versions(c) == expected_versions());
}

TEST_CASE("migration 1 has the address uniqueness and the cascades the relay relies on",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  CHECK(scalar(c, "SELECT indexdef FROM pg_indexes WHERE indexname = 'events_address'")
        == "CREATE UNIQUE INDEX events_address ON public.events USING btree (community_id, "
           "pubkey, kind, d_tag) WHERE (d_tag IS NOT NULL)");
  for (const char* index : {"events_author_kind", "events_kind", "events_recent",
                            "event_tags_value", "events_pkey"})
    CHECK(scalar(c, "SELECT count(*) FROM pg_indexes WHERE indexname = $1",
                 {std::string(index)}) == "1");
  // Deleting a community removes its events and their tags.
  scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " SELECT id, '\\x01', '\\x02', 1, 1, '{}' FROM communities RETURNING 1");
  scalar(c, "INSERT INTO event_tags SELECT community_id, id, 't', 'v', 1, 1 FROM events"
            " RETURNING 1");
  scalar(c, "DELETE FROM communities RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM events") == "0");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags") == "0");
  // access is checked.
  auto bad = c.exec("INSERT INTO communities (host, access) VALUES ('y.example', 'secret')");
  CHECK(bad.sqlstate() == "23514");
}

TEST_CASE("migration 13: an event's tags go with it, without a foreign key checking each tag row",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  CHECK(scalar(c, "SELECT count(*) FROM pg_constraint WHERE contype = 'f'"
                  " AND conrelid = 'event_tags'::regclass") == "0");
  scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  // The tag rows are the event's own tags (migration 21 finds them in `raw`).
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " SELECT c.id, v.id, '\\x02', 1, 1, '{\"tags\":[[\"t\",\"v\"],[\"p\",\"w\"]]}'"
            " FROM communities c, (VALUES ('\\x01'::bytea), ('\\x03'::bytea)) AS v(id) RETURNING 1");
  scalar(c, "INSERT INTO event_tags SELECT community_id, id, 't', 'v', 1, 1 FROM events"
            " UNION ALL SELECT community_id, id, 'p', 'w', 1, 1 FROM events RETURNING 1");
  REQUIRE(scalar(c, "SELECT count(*) FROM event_tags") == "4");
  // One event deleted: its two tag rows go, the other event's stay.
  scalar(c, "DELETE FROM events WHERE id = '\\x01' RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags") == "2");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE event_id = '\\x03'") == "2");
  // A rolled-back delete keeps them.
  REQUIRE(c.exec("BEGIN").ok());
  scalar(c, "DELETE FROM events RETURNING 1");
  REQUIRE(c.exec("ROLLBACK").ok());
  CHECK(scalar(c, "SELECT count(*) FROM event_tags") == "2");
  // The community's cascade reaches the tags through the events.
  scalar(c, "DELETE FROM communities RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags") == "0");
}

TEST_CASE("migration 17: a read driven by one tag value is an index-only scan, sorted only by ties",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  // Three events replying to one note, two of them in the same second.
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " SELECT $1::bigint, v.id, '\\x02', v.at, 1, '{}' FROM"
            " (VALUES ('\\x01'::bytea, 5), ('\\x03'::bytea, 7), ('\\x04'::bytea, 7)) AS v(id, at)"
            " RETURNING 1", {community});
  scalar(c, "INSERT INTO event_tags SELECT community_id, id, 'e', 'root', created_at, kind"
            " FROM events RETURNING 1");
  REQUIRE(c.exec("VACUUM ANALYZE event_tags").ok()); // the visibility map an index-only scan reads
  protocol::filter replies;
  replies.tags.push_back({'e', {"root"}});
  auto read = storage::bounded_history_sql(std::stoll(community), {replies}, 0, 500, 1 << 20);
  REQUIRE(read);
  REQUIRE(read->fixed_plan);
  // As the relay runs it: the generic plan; seq scans off so that three rows still use indexes.
  REQUIRE(c.exec("SET plan_cache_mode = force_generic_plan").ok());
  REQUIRE(c.exec("SET enable_seqscan = off").ok());
  auto plan = c.exec("EXPLAIN (COSTS OFF) " + read->text, read->params);
  REQUIRE(plan.ok());
  std::string text;
  for (int row = 0; row < plan.rows(); ++row)
    text += std::string(plan.text(row, 0)) + "\n";
  INFO(text);
  CHECK(text.find("Index Only Scan using event_tags_value") != std::string::npos);
  // The rows come in the index's order (ties on created_at sorted by id as they come, an
  // incremental sort): nothing sorts the whole reply again under its running total.
  CHECK(text.find("->  Sort") == std::string::npos);
  CHECK_FALSE(text.starts_with("Sort"));
  auto rows = c.exec(read->text, read->params, true);
  REQUIRE(rows.ok());
  REQUIRE(rows.rows() == 3);
}

namespace {

/// 3,000 events (created at 1 to 3,000) with three tag rows each (e, p and t), as the writer
/// stores them.
void insert_three_tag_events(storage::pg_connection& c, const std::string& community) {
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " SELECT $1::bigint, int4send(g), '\\x02', g, 1,"
            " '{\"tags\":[[\"e\",\"e' || g || '\"],[\"p\",\"p' || g || '\"],[\"t\",\"x\"]]}'"
            " FROM generate_series(1, 3000) g RETURNING 1", {community});
  scalar(c, "INSERT INTO event_tags SELECT $1::bigint, int4send(g), n, v || g, g, 1"
            " FROM generate_series(1, 3000) g,"
            " (VALUES ('e', 'e'), ('p', 'p'), ('t', 'x')) AS tags (n, v) RETURNING 1", {community});
}

} // namespace

TEST_CASE("migration 21: one index entry per tag row; an event's tags go by their values",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  CHECK(scalar(c, "SELECT count(*) FROM pg_indexes WHERE indexname = 'event_tags_event'") == "0");
  CHECK(scalar(c, "SELECT indexdef FROM pg_indexes WHERE indexname = 'event_tags_room'")
        == "CREATE INDEX event_tags_room ON public.event_tags USING btree (community_id, event_id)"
           " WHERE (name = ANY (ARRAY['d'::text, 'h'::text]))");
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  // Every kind of tag the relay indexes or skips: an escaped NUL in a value (never indexed) and in
  // the content, which Postgres's JSON functions refuse; a value that only spells "\u0000"
  // (indexed); an escaped backslash before a NUL escape; a repeated tag; names longer than one
  // letter; a tag without value; a non-array tag.
  const std::string raw =
    R"({"content":"a\u0000b","tags":[["e","aa"],["p","b\u0000c"],["t","lit\\u0000x"],)"
    R"(["t","q\\\u0000"],["xx","y"],["d"],["h","r\"oom"],["e","aa"],5,["h","\u00e9"]]})";
  insert_tagged(c, community, "\\x01", raw,
                {{"e", "aa"}, {"t", "lit\\u0000x"}, {"h", "r\"oom"}, {"h", "\xC3\xA9"}});
  // Another event with the same tag values in the same second keeps its rows.
  insert_tagged(c, community, "\\x03", R"({"tags":[["e","aa"],["h","r\"oom"]]})",
                {{"e", "aa"}, {"h", "r\"oom"}});
  REQUIRE(scalar(c, "SELECT count(*) FROM event_tags") == "6");

  // The backend's counts not yet reported include this transaction's (and earlier ones').
  const std::string seq_scans =
    "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'event_tags'";
  REQUIRE(c.exec("BEGIN").ok());
  REQUIRE(c.exec("SET LOCAL enable_seqscan = off").ok());
  const std::string before = scalar(c, seq_scans);
  scalar(c, "DELETE FROM events WHERE id = '\\x01' RETURNING 1");
  // Each of its tag rows was found by its key, with no scan of the table.
  CHECK(scalar(c, seq_scans) == before);
  REQUIRE(c.exec("COMMIT").ok());
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE event_id = '\\x01'") == "0");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE event_id = '\\x03'") == "2");
  // A member list (13534) has no tag rows: replacing one probes none of its thousands of tags.
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " SELECT $1::bigint, '\\x05', '\\x02', 7, 13534, '{\"tags\":[' || string_agg("
            "'[\"p\",\"' || g || '\"]', ',') || ']}' FROM generate_series(1, 2000) g RETURNING 1",
         {community});
  const std::string index_scans =
    "SELECT idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'event_tags'";
  REQUIRE(c.exec("BEGIN").ok());
  const std::string probes_before = scalar(c, index_scans);
  scalar(c, "DELETE FROM events WHERE id = '\\x05' RETURNING 1");
  CHECK(scalar(c, index_scans) == probes_before);
  REQUIRE(c.exec("COMMIT").ok());
  CHECK(scalar(c, "SELECT count(*) FROM event_tags") == "2");
}

TEST_CASE("migration 21: reads testing a known event's tags use an index",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  REQUIRE(c.exec("SET enable_seqscan = off").ok());
  auto plan_of = [&](const storage::sql_statement& read) {
    auto plan = c.exec("EXPLAIN (COSTS OFF) " + read.text, read.params);
    REQUIRE(plan.ok());
    std::string text;
    for (int row = 0; row < plan.rows(); ++row)
      text += std::string(plan.text(row, 0)) + "\n";
    return text;
  };
  // A tag condition next to kinds: probed in event_tags_value with the row's created_at.
  protocol::filter tagged;
  tagged.kinds = std::vector<std::uint32_t>{1};
  tagged.tags.push_back({'p', {"a", "b"}});
  auto read = storage::bounded_history_sql(std::stoll(community), {tagged}, 0, 500, 1 << 20);
  REQUIRE(read);
  auto text = plan_of(*read);
  INFO(text);
  CHECK(text.find("event_tags_value") != std::string::npos);
  CHECK(text.find("Seq Scan") == std::string::npos);
  // The hidden-room test of a COUNT by a reader who may not see a room: the row's room tags
  // by event.
  protocol::room_hiding hiding;
  hiding.unseen = {"secret"};
  protocol::filter recent;
  auto hidden = storage::count_sql(std::stoll(community), {recent}, 0, hiding);
  REQUIRE(hidden);
  auto hidden_text = plan_of(*hidden);
  INFO(hidden_text);
  CHECK(hidden_text.find("event_tags_room") != std::string::npos);
  CHECK(hidden_text.find("Seq Scan") == std::string::npos);
}

TEST_CASE("migration 22: deleting a community does not probe its events' tags one by one",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  auto doomed = scalar(c, "INSERT INTO communities (host) VALUES ('doomed.example') RETURNING id");
  auto kept = scalar(c, "INSERT INTO communities (host) VALUES ('kept.example') RETURNING id");
  for (const auto& community : {doomed, kept})
    insert_three_tag_events(c, community);
  REQUIRE(scalar(c, "UPDATE event_tags SET value = 'x' WHERE name = 't' RETURNING 1") == "1");
  REQUIRE(scalar(c, "SELECT count(*) FROM event_tags") == "18000");
  REQUIRE(c.exec("ANALYZE events").ok());
  REQUIRE(c.exec("ANALYZE event_tags").ok());

  const std::string index_scans =
    "SELECT idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'event_tags'";
  REQUIRE(c.exec("BEGIN").ok());
  const auto probes_before = std::stoll(scalar(c, index_scans));
  const auto started = std::chrono::steady_clock::now();
  scalar(c, "DELETE FROM communities WHERE id = $1::bigint RETURNING 1", {doomed});
  const auto took = std::chrono::steady_clock::now() - started;
  // One range for the community's tag rows (an index scan at most), none per event: before
  // migration 22 this was 9,000 probes, one per tag row already deleted.
  INFO("3,000 events of a community deleted in "
       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(std::stoll(scalar(c, index_scans)) - probes_before <= 1);
  // Later in the same transaction, another community's event still takes its tag rows along.
  scalar(c, "DELETE FROM events WHERE community_id = $1::bigint AND id = int4send(7) RETURNING 1",
         {kept});
  REQUIRE(c.exec("COMMIT").ok());
  CHECK(scalar(c, "SELECT count(*) FROM events WHERE community_id = $1::bigint", {doomed}) == "0");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint", {doomed})
        == "0");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint", {kept})
        == "8997");
  CHECK(scalar(c, "SELECT count(*) FROM events WHERE community_id = $1::bigint", {kept}) == "2999");
}

TEST_CASE("migration 28: reports stored before borrow the rooms of what they report, and lose them with it",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* reports_borrow = &migrated_up_to(c, 28);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string memo_hex(64, 'a');
  insert_tagged(c, community, ("\\x" + memo_hex).c_str(), R"({"tags":[["h","office"]]})", {{"h", "office"}});
  auto add = [&](const std::string& id, const std::string& kind,
                 std::initializer_list<std::pair<std::string, std::string>> tags) {
    scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
              " VALUES ($1::bigint, $2::bytea, '\\x02', 7, $3::int, '{}') RETURNING 1",
           {community, id, kind});
    for (const auto& [name, value] : tags)
      scalar(c, "INSERT INTO event_tags VALUES ($1::bigint, $2::bytea, $3, $4, 7, $5::int) RETURNING 1",
             {community, id, name, value, kind});
  };
  // A report of the memo, one with an h of its own, and a note that only mentions the memo.
  add("\\x0b", "1984", {{"e", memo_hex}});
  add("\\x0c", "1984", {{"e", memo_hex}, {"h", "lobby"}});
  add("\\x0d", "1", {{"e", memo_hex}});
  REQUIRE(c.exec_script(reports_borrow->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',') FROM event_tags WHERE name = 'room'")
        == "0b:office");
  scalar(c, "DELETE FROM events WHERE id = '\\x0b' RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'room'") == "0");
}

TEST_CASE("migration 31: room joins stored with invite codes are deleted, with their tags",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* codes_gone = &migrated_up_to(c, 31);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  insert_tagged(c, community, "\\x0a", R"({"kind":9021,"tags":[["h","locked"],["code","abc"]],"content":""})",
                {{"h", "locked"}});
  insert_tagged(c, community, "\\x0b", R"({"kind":9021,"tags":[["h","lobby"]],"content":"[\"code\",\"x\"]"})",
                {{"h", "lobby"}});
  scalar(c, "UPDATE events SET kind = 9021 RETURNING 1");
  REQUIRE(c.exec_script(codes_gone->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(id, 'hex'), ',') FROM events") == "0b");
  CHECK(scalar(c, "SELECT string_agg(value, ',') FROM event_tags") == "lobby");
}

TEST_CASE("migration 32: room invite codes are tied to their 9009; codes whose 9009 is gone are revoked",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* tied = &migrated_up_to(c, 32);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  scalar(c, "INSERT INTO rooms (community_id, room_id) VALUES ($1::bigint, 'pizza') RETURNING 1", {community});
  // A code as it was typed (blanks around it are not part of it), one that expires, one whose
  // 9009 was deleted, one whose 9009 holds a NUL escape Postgres's JSON functions refuse.
  insert_tagged(c, community, "\\x0a", R"({"kind":9009,"tags":[["h","pizza"],["code"," kept-code\n"]],"content":""})",
                {{"h", "pizza"}});
  insert_tagged(c, community, "\\x0b", R"({"kind":9009,"tags":[["h","pizza"],["code","expiring"]],"content":""})",
                {{"h", "pizza"}});
  insert_tagged(c, community, "\\x0c", R"({"kind":9009,"tags":[["h","pizza"],["code","nul"]],"content":"\u0000"})",
                {{"h", "pizza"}});
  // Tags without a value are passed over, as the relay reads them; of two 9009s with one code
  // (stored before a repeated code became a no-op), the one that lives longest holds it.
  insert_tagged(c, community, "\\x0d", R"({"kind":9009,"tags":[["h"],["h","pizza"],["code"],["code","twice"]],"content":""})",
                {{"h", "pizza"}});
  insert_tagged(c, community, "\\x0e", R"({"kind":9009,"tags":[["h","pizza"],["code","twice"]],"content":""})",
                {{"h", "pizza"}});
  scalar(c, "UPDATE events SET kind = 9009, expires_at = CASE WHEN id = '\\x0b' THEN 2000000000"
            " WHEN id = '\\x0e' THEN 1000 END RETURNING 1");
  for (const char* code : {"kept-code", "expiring", "deleted-before", "nul", "twice"})
    scalar(c, "INSERT INTO room_invites (community_id, room_id, code_hash) VALUES ($1::bigint, 'pizza',"
              " encode(sha256(convert_to($2, 'UTF8')), 'hex')) RETURNING 1", {community, std::string(code)});
  REQUIRE(c.exec_script(tied->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || coalesce(expires_at::text, '-'), ','"
                  " ORDER BY event_id) FROM room_invites") == "0a:-,0b:2000000000,0d:-");
  // Its 9009 deleted, whatever deletes it, the code is revoked.
  scalar(c, "DELETE FROM events WHERE id = '\\x0a' RETURNING 1");
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex'), ',' ORDER BY event_id) FROM room_invites") == "0b,0d");
}

TEST_CASE("migration 33: zap receipts, and reports of comments, get the rooms they borrow, and lose them with"
          " themselves",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* borrowing = &migrated_up_to(c, 33);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string memo_hex(64, 'a'), comment_hex(64, 'b');
  // A memo in the office, a comment on it (which borrowed the office), a report of the comment
  // and a receipt of a zap of the memo (which borrowed nothing before).
  insert_tagged(c, community, ("\\x" + memo_hex).c_str(), "{}", {{"h", "office"}});
  insert_tagged(c, community, ("\\x" + comment_hex).c_str(), "{}", {{"E", memo_hex.c_str()}, {"room", "office"}});
  insert_tagged(c, community, "\\x0c", "{}", {{"e", comment_hex.c_str()}});
  insert_tagged(c, community, "\\x0d", "{}", {{"e", memo_hex.c_str()}});
  scalar(c, "UPDATE events SET kind = CASE WHEN id = '\\x0c' THEN 1984 WHEN id = '\\x0d' THEN 9735"
            " WHEN substr(encode(id, 'hex'), 1, 1) = 'b' THEN 1111 ELSE 9 END RETURNING 1");
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(borrowing->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',' ORDER BY event_id)"
                  " FROM event_tags WHERE name = 'room' AND kind IN (1984, 9735)") == "0c:office,0d:office");
  scalar(c, "DELETE FROM events WHERE id = '\\x0d' RETURNING 1");
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex'), ',') FROM event_tags WHERE name = 'room'"
                  " AND kind IN (1984, 9735)") == "0c");
}

TEST_CASE("migration 34: reactions to a comment get the rooms it borrows, and lose them with themselves",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* borrowing = &migrated_up_to(c, 34);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string memo_hex(64, 'a'), comment_hex(64, 'b');
  // A memo in the office, a comment on it (which borrowed the office), a reaction to the comment
  // (which borrowed nothing before) and one with an h of its own.
  insert_tagged(c, community, ("\\x" + memo_hex).c_str(), "{}", {{"h", "office"}});
  insert_tagged(c, community, ("\\x" + comment_hex).c_str(), "{}", {{"E", memo_hex.c_str()}, {"room", "office"}});
  insert_tagged(c, community, "\\x0c", "{}", {{"e", comment_hex.c_str()}});
  insert_tagged(c, community, "\\x0d", "{}", {{"e", memo_hex.c_str()}, {"h", "lobby"}});
  scalar(c, "UPDATE events SET kind = CASE WHEN id IN ('\\x0c', '\\x0d') THEN 7"
            " WHEN substr(encode(id, 'hex'), 1, 1) = 'b' THEN 1111 ELSE 9 END RETURNING 1");
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(borrowing->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',' ORDER BY event_id)"
                  " FROM event_tags WHERE name = 'room' AND kind = 7") == "0c:office");
  scalar(c, "DELETE FROM events WHERE id = '\\x0c' RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'room' AND kind = 7") == "0");
}

TEST_CASE("migration 35: an addressable event's borrowed rooms go with it", "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* widened = &migrated_up_to(c, 35);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  insert_tagged(c, community, "\\x0e", "{}", {{"d", "picnic"}, {"room", "office"}});
  insert_tagged(c, community, "\\x0f", "{}", {{"d", "state"}, {"room", "office"}});
  scalar(c, "UPDATE events SET kind = CASE WHEN id = '\\x0e' THEN 31923 ELSE 39000 END RETURNING 1");
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(widened->sql).ok());
  scalar(c, "DELETE FROM events RETURNING 1");
  // Room state (39000-39005) names its room in its d and never borrows: no probe for it.
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex'), ',') FROM event_tags WHERE name = 'room'") == "0f");
}

/// A community holding alice's note (id "01" and 62 zeros), for the deletion clean-ups.
struct deletions_fixture {
  test::fresh_database db;
  storage::pg_connection c{db.conninfo()};
  std::string community;
  const std::string alice = std::string(64, 'a');
  const std::string mallory = std::string(64, 'b');
  const std::string note_id = "01" + std::string(62, '0');
  const storage::migration* cleaned;

  explicit deletions_fixture(int version) : cleaned(&migrated_up_to(c, version)) {
    community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
    event("\\x01", alice, 1, R"({"kind":1,"tags":[],"content":"hers"})");
    scalar(c, "UPDATE events SET id = decode($1, 'hex') WHERE id = '\\x01' RETURNING 1", {note_id});
  }
  void event(const char* id, const std::string& pubkey, int kind, const std::string& raw) {
    scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
              " VALUES ($1::bigint, $2::bytea, decode($3, 'hex'), 7, $4::int, $5) RETURNING 1",
           {community, std::string(id), pubkey, std::to_string(kind), raw});
  }
  std::string deletions_left() {
    return scalar(c, "SELECT string_agg(encode(id, 'hex'), ',' ORDER BY id) FROM events WHERE kind = 5");
  }
};

TEST_CASE("migration 36: deletions naming another author's stored event or key are deleted",
          "[integration][migrations]") {
  deletions_fixture f(36);
  // Mallory's: naming her note, her key in an `a` of a regular kind, and (kept) his own.
  f.event("\\x0a", f.mallory, 5, R"({"kind":5,"tags":[["e",")" + f.note_id + R"("]],"content":""})");
  f.event("\\x0b", f.mallory, 5, R"({"kind":5,"tags":[["a","9:)" + f.alice + R"(:"]],"content":""})");
  f.event("\\x0c", f.mallory, 5, R"({"kind":5,"tags":[["a","30023:)" + f.mallory + R"(:post"],["e","zz"],["e"],"x"],"content":""})");
  // Alice's own, a NUL escape left unread, and tags that are not an array.
  f.event("\\x0d", f.alice, 5, R"({"kind":5,"tags":[["e",")" + f.note_id + R"("],["a","9:)" + f.alice + R"(:"]],"content":""})");
  f.event("\\x0e", f.mallory, 5, R"({"kind":5,"tags":[["e",")" + f.note_id + R"("]],"content":"\u0000"})");
  f.event("\\x0f", f.mallory, 5, R"({"kind":5,"tags":{"e":1},"content":""})");
  REQUIRE(f.c.exec_script(f.cleaned->sql).ok());
  CHECK(f.deletions_left() == "0c,0d,0e,0f");
  CHECK(scalar(f.c, "SELECT count(*) FROM events WHERE kind = 1") == "1");
}

TEST_CASE("migration 37: deletions naming another author's event or key in either tag are deleted",
          "[integration][migrations]") {
  deletions_fixture f(37);
  const auto* cleaned = f.cleaned;
  // Mallory's: her key in an address in an `e`, her note's id in an `a`, her note named beside
  // a NUL escape in the content (left unread by migration 36).
  f.event("\\x0a", f.mallory, 5, R"({"kind":5,"tags":[["e","9:)" + f.alice + R"(:"]],"content":""})");
  f.event("\\x0b", f.mallory, 5, R"({"kind":5,"tags":[["a",")" + f.note_id + R"("]],"content":""})");
  f.event("\\x0c", f.mallory, 5, R"({"kind":5,"tags":[["e",")" + f.note_id + R"("]],"content":"\u0000"})");
  // Kept: alice's own naming her note in an `a`, mallory's own address in an `e` (with a value
  // holding a NUL escape, and an escaped backslash before "u0000"), and tags that are not an array.
  f.event("\\x0d", f.alice, 5, R"({"kind":5,"tags":[["a",")" + f.note_id + R"("]],"content":""})");
  f.event("\\x0e", f.mallory, 5, R"({"kind":5,"tags":[["e","9:)" + f.mallory + R"(:"],["e","x\u0000"],["e","\\u0000"]],"content":""})");
  f.event("\\x0f", f.mallory, 5, R"({"kind":5,"tags":{"e":1},"content":""})");
  REQUIRE(f.c.exec_script(cleaned->sql).ok());
  CHECK(f.deletions_left() == "0d,0e,0f");
  CHECK(scalar(f.c, "SELECT count(*) FROM events WHERE kind = 1") == "1");
}

TEST_CASE("migration 40: an event's tag rows go in one statement, found by their key",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  // 3,000 events of three tag rows, and a follow list of 2,000 `p` tags sharing their values.
  insert_three_tag_events(c, community);
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " SELECT $1::bigint, '\\xff', '\\x03', 7, 3, '{\"tags\":[' || string_agg("
            "'[\"p\",\"p' || g || '\"]', ',') || ',[\"pp\",\"p1\"],[\"p\"]]}' FROM generate_series(1, 2000) g"
            " RETURNING 1", {community});
  scalar(c, "INSERT INTO event_tags SELECT $1::bigint, '\\xff', 'p', 'p' || g, 7, 3"
            " FROM generate_series(1, 2000) g RETURNING 1", {community});
  REQUIRE(c.exec("ANALYZE event_tags").ok());

  const std::string seq_scans =
    "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'event_tags'";
  REQUIRE(c.exec("BEGIN").ok());
  const std::string before = scalar(c, seq_scans);
  scalar(c, "DELETE FROM events WHERE id = '\\xff' RETURNING 1");
  // The planner itself probes the index (enable_seqscan is on): no scan of the table.
  CHECK(scalar(c, seq_scans) == before);
  REQUIRE(c.exec("COMMIT").ok());
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE event_id = '\\xff'") == "0");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags") == "9000");
  // The other events' rows of the same values (created at 1 to 3,000, the list at 7) stay.
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'p' AND value = 'p7'") == "1");
}

TEST_CASE("migration 43: comments that name their root by address get the rooms of its live version",
          "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* by_address = &migrated_up_to(c, 43);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  const std::string author(64, 'a');
  // An article in the office, and comments on it: by address, by a malformed one, and one with
  // an h of its own.
  insert_tagged(c, community, "\\x0a", "{}", {{"d", "plan"}, {"h", "office"}});
  scalar(c, "UPDATE events SET kind = 30023, d_tag = 'plan', pubkey = decode($1, 'hex') RETURNING 1", {author});
  const std::string root = "30023:" + author + ":plan";
  insert_tagged(c, community, "\\x0b", "{}", {{"A", root.c_str()}});
  insert_tagged(c, community, "\\x0c", "{}", {{"A", ("3002:" + author + ":plan").c_str()}});
  insert_tagged(c, community, "\\x0d", "{}", {{"A", root.c_str()}, {"h", "lobby"}});
  scalar(c, "UPDATE events SET kind = 1111 WHERE id <> '\\x0a' RETURNING 1");
  scalar(c, "UPDATE event_tags t SET kind = e.kind FROM events e WHERE e.id = t.event_id RETURNING 1");
  REQUIRE(c.exec_script(by_address->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(event_id, 'hex') || ':' || value, ',') FROM event_tags"
                  " WHERE name = 'room'") == "0b:office");
  scalar(c, "DELETE FROM events WHERE id = '\\x0b' RETURNING 1");
  CHECK(scalar(c, "SELECT count(*) FROM event_tags WHERE name = 'room'") == "0");
}

TEST_CASE("migration 44: room joins stored with invite codes as claim are deleted", "[integration][migrations]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  const auto* claims_gone = &migrated_up_to(c, 44);
  auto community = scalar(c, "INSERT INTO communities (host) VALUES ('x.example') RETURNING id");
  insert_tagged(c, community, "\\x0a", R"({"kind":9021,"tags":[["h","locked"],["claim","abc"]],"content":""})", {});
  insert_tagged(c, community, "\\x0b", R"({"kind":9021,"tags":[["h","lobby"]],"content":"[\"claim\",\"x\"]"})", {});
  insert_tagged(c, community, "\\x0c", R"({"kind":9021,"tags":[["h","lobby"],["claim",""]],"content":""})", {});
  insert_tagged(c, community, "\\x0d", R"({"kind":9021,"tags":[["h","lobby"],["claim",""],["claim","abc"]],"content":""})", {});
  scalar(c, "UPDATE events SET kind = 9021 RETURNING 1");
  REQUIRE(c.exec_script(claims_gone->sql).ok());
  CHECK(scalar(c, "SELECT string_agg(encode(id, 'hex'), ',' ORDER BY id) FROM events") == "0b,0c");
}
