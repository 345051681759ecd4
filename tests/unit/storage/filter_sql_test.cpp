// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/hex.hpp"
#include "storage/filter_sql.hpp"
#include "storage/pg_array.hpp"

using namespace comb::protocol;
using namespace comb::storage;

namespace {

bytes32 filled(std::uint8_t byte) {
  bytes32 out{};
  out.fill(byte);
  return out;
}

std::string param(const sql_statement& s, std::size_t n) {
  REQUIRE(n >= 1);
  REQUIRE(n <= s.params.size());
  REQUIRE(s.params[n - 1].has_value());
  return *s.params[n - 1];
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t placeholders_in(const std::string& text) {
  std::size_t highest = 0;
  for (std::size_t at = text.find('$'); at != std::string::npos; at = text.find('$', at + 1))
    highest = std::max<std::size_t>(highest, std::stoul(text.substr(at + 1)));
  return highest;
}

} // namespace

TEST_CASE("array literals quote and escape every text element", "[storage][filter_sql]") {
  pg_array array;
  array.add_text("plain");
  array.add_text("a,b");
  array.add_text("{braces}");
  array.add_text("say \"hi\"");
  array.add_text("back\\slash");
  array.add_text("NULL");
  array.add_text("");
  array.add_text(" spaced ");
  CHECK(array.str()
        == R"({"plain","a,b","{braces}","say \"hi\"","back\\slash","NULL",""," spaced "})");
  CHECK(array.size() == 8);
}

TEST_CASE("array literals carry bytea in hex form, integers bare and real NULLs",
          "[storage][filter_sql]") {
  pg_array bytes;
  bytes.add_bytea(std::vector<std::uint8_t>{0x00, 0xab, 0xff});
  bytes.add_null();
  CHECK(bytes.str() == R"({"\\x00abff",NULL})");
  pg_array numbers;
  numbers.add_integer(-5);
  numbers.add_integer(1700000000);
  CHECK(numbers.str() == "{-5,1700000000}");
  CHECK(pg_array{}.str() == "{}");
  CHECK(bytea_param(std::vector<std::uint8_t>{0x0a, 0x1b}) == "\\x0a1b");
}

TEST_CASE("a filter becomes scoped, parameterized SQL", "[storage][filter_sql]") {
  filter f;
  f.ids = std::vector<bytes32>{filled(0x11), filled(0x12)};
  f.authors = std::vector<bytes32>{filled(0x22), filled(0x33)};
  f.kinds = std::vector<std::uint32_t>{1, 30023};
  f.since = 100;
  f.until = 200;
  f.limit = 7;
  auto s = history_sql(42, {f}, 1000, 500);
  REQUIRE(s);
  CHECK(param(*s, 1) == "42");
  CHECK(param(*s, 2) == "1000");
  CHECK(param(*s, 3)
        == "{\"\\\\x" + to_hex(filled(0x11)) + "\",\"\\\\x" + to_hex(filled(0x12)) + "\"}");
  CHECK(param(*s, 4)
        == "{\"\\\\x" + to_hex(filled(0x22)) + "\",\"\\\\x" + to_hex(filled(0x33)) + "\"}");
  CHECK(param(*s, 5) == "{1,30023}");
  CHECK(param(*s, 6) == "100");
  CHECK(param(*s, 7) == "200");
  CHECK(param(*s, 8) == "7");
  CHECK(s->params.size() == 8);
  CHECK(placeholders_in(s->text) == 8);
  CHECK(contains(s->text, "e.community_id = $1::bigint"));
  CHECK(contains(s->text, "e.expires_at IS NULL OR e.expires_at > $2::bigint"));
  CHECK(contains(s->text, "e.id = ANY($3::bytea[])"));
  CHECK(contains(s->text, "e.pubkey = ANY($4::bytea[])"));
  CHECK(contains(s->text, "e.kind = ANY($5::int[])"));
  CHECK(contains(s->text, "e.created_at >= $6::bigint"));
  CHECK(contains(s->text, "e.created_at <= $7::bigint"));
  CHECK(contains(s->text, "ORDER BY e.created_at DESC, e.id LIMIT $8::bigint"));
}

TEST_CASE("no value is ever spliced into the SQL text", "[storage][filter_sql]") {
  filter f;
  f.tags.push_back({'t', {"'; DROP TABLE events; --", "robert\"); --"}});
  f.since = 123456789;
  auto s = history_sql(987654321, {f}, 555555555, 500);
  REQUIRE(s);
  CHECK_FALSE(contains(s->text, "DROP"));
  CHECK_FALSE(contains(s->text, "robert"));
  CHECK_FALSE(contains(s->text, "123456789"));
  CHECK_FALSE(contains(s->text, "987654321"));
  CHECK_FALSE(contains(s->text, "555555555"));
  CHECK_FALSE(contains(s->text, "500"));
  CHECK(param(*s, 3) == "123456789");
  CHECK(param(*s, 4) == "t");
  CHECK(param(*s, 5) == R"({"'; DROP TABLE events; --","robert\"); --"})");
}

TEST_CASE("tag conditions test event_tags by name and value", "[storage][filter_sql]") {
  filter f;
  f.tags.push_back({'e', {"a,b", "x\\y"}});
  f.tags.push_back({'p', {"{}"}});
  auto s = history_sql(1, {f}, 0, 10);
  REQUIRE(s);
  CHECK(contains(s->text, "EXISTS (SELECT 1 FROM event_tags t WHERE t.community_id = "
                          "e.community_id AND t.event_id = e.id AND t.created_at = e.created_at"
                          " AND t.name = $3::text"
                          " AND t.value = ANY($4::text[]))"));
  CHECK(contains(s->text, "t.name = $5::text AND t.value = ANY($6::text[])"));
  CHECK(param(*s, 4) == R"({"a,b","x\\y"})");
  CHECK(param(*s, 6) == R"({"{}"})");
  CHECK(param(*s, 7) == "10");
}

TEST_CASE("the default limit applies when a filter has none", "[storage][filter_sql]") {
  auto s = history_sql(1, {filter{}}, 0, 321);
  REQUIRE(s);
  CHECK(param(*s, 3) == "321");
  CHECK(s->params.size() == 3);
}

TEST_CASE("filters that cannot match cost no query", "[storage][filter_sql]") {
  filter limit_zero;
  limit_zero.limit = 0;
  filter no_ids;
  no_ids.ids = std::vector<bytes32>{};
  filter no_kinds;
  no_kinds.kinds = std::vector<std::uint32_t>{};
  filter backwards;
  backwards.since = 10;
  backwards.until = 5;
  filter empty_tag;
  empty_tag.tags.push_back({'t', {}});
  filter unindexed_tag;
  unindexed_tag.tags.push_back({'t', {std::string("a\0b", 3), std::string(513, 'x')}});
  for (const auto& f : {limit_zero, no_ids, no_kinds, backwards, empty_tag, unindexed_tag})
    CHECK_FALSE(history_sql(1, {f}, 0, 100));
  CHECK_FALSE(history_sql(1, {}, 0, 100));
  CHECK_FALSE(history_sql(1, {filter{}}, 0, 0));
  // COUNT ignores limits but not the other reasons.
  CHECK(count_sql(1, {limit_zero}, 0));
  CHECK_FALSE(count_sql(1, {no_ids, backwards, unindexed_tag}, 0));
}

TEST_CASE("unindexable tag values are dropped, the rest still match", "[storage][filter_sql]") {
  filter f;
  f.tags.push_back({'t', {std::string(600, 'x'), "ok"}});
  auto s = history_sql(1, {f}, 0, 10);
  REQUIRE(s);
  CHECK(param(*s, 4) == "ok");
  CHECK(contains(s->text, "t.value = $4::text"));
}

TEST_CASE("one tag value drives the read from event_tags, newest first",
          "[storage][filter_sql]") {
  filter f;
  f.tags.push_back({'e', {std::string(64, 'a')}});
  f.tags.push_back({'p', {"x", "y"}});
  f.kinds = std::vector<std::uint32_t>{1, 7};
  f.limit = 30;
  auto s = history_sql(1, {f}, 0, 500);
  REQUIRE(s);
  CHECK(s->text.starts_with("SELECT e.raw FROM event_tags t JOIN events e ON e.community_id ="
                            " t.community_id AND e.id = t.event_id WHERE t.community_id = $1::bigint"
                            " AND t.name = $3::text AND t.value = $4::text AND "));
  CHECK(contains(s->text, "e.kind = ANY($5::int[])"));
  // The other tag conditions stay conditions on the event.
  CHECK(contains(s->text, "t.name = $6::text AND t.value = ANY($7::text[])"));
  CHECK(s->text.ends_with(" ORDER BY t.created_at DESC, t.event_id LIMIT $8::bigint"));
  CHECK(param(*s, 4) == std::string(64, 'a'));
  CHECK(placeholders_in(s->text) == 8);
}

TEST_CASE("several filters are unioned, each with its own limit, newest first overall",
          "[storage][filter_sql]") {
  filter a;
  a.kinds = std::vector<std::uint32_t>{1};
  a.limit = 2;
  filter never;
  never.limit = 0;
  filter b;
  b.kinds = std::vector<std::uint32_t>{7};
  auto s = history_sql(5, {a, never, b}, 9, 50);
  REQUIRE(s);
  CHECK(contains(s->text, " UNION "));
  CHECK(contains(s->text, "JOIN events e ON e.community_id = $1::bigint AND e.id = m.id"));
  CHECK(contains(s->text, "ORDER BY m.created_at DESC, m.id"));
  CHECK(param(*s, 3) == "1");
  CHECK(contains(s->text, "e.kind = $3::int"));
  CHECK(param(*s, 4) == "2");
  CHECK(param(*s, 5) == "7");
  CHECK(param(*s, 6) == "50");
  CHECK(s->params.size() == 6);
  CHECK(placeholders_in(s->text) == 6);
}

TEST_CASE("several filters asking for more than the union bound share it", "[storage][filter_sql]") {
  std::vector<filter> filters(20);
  for (std::uint32_t i = 0; i < filters.size(); ++i) {
    filters[i].kinds = std::vector<std::uint32_t>{i};
    filters[i].limit = 5000;
  }
  filters[0].limit = 1;
  auto s = history_sql(5, filters, 9, 500);
  REQUIRE(s);
  // Parameters: community, now, then kind and limit for each filter.
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < filters.size(); ++i)
    total += std::stoull(param(*s, 4 + 2 * static_cast<int>(i)));
  CHECK(total <= max_union_rows);
  CHECK(param(*s, 4) == "1");    // a small limit keeps at least a row
  CHECK(param(*s, 6) == "526");  // 5000 x 10000 / 95001
  // Within the bound nothing changes.
  filters.resize(2);
  auto within = history_sql(5, filters, 9, 500);
  REQUIRE(within);
  CHECK(param(*within, 6) == "5000");
}

TEST_CASE("count unions filters without their limits, counting one past max_counted_events at most",
          "[storage][filter_sql]") {
  filter a;
  a.kinds = std::vector<std::uint32_t>{1};
  a.limit = 1;
  filter b;
  b.authors = std::vector<bytes32>{filled(1)};
  auto s = count_sql(3, {a, b}, 77);
  REQUIRE(s);
  // With the community's state version, read in the count's own snapshot.
  CHECK(contains(s->text, ") SELECT (SELECT count(DISTINCT id) FROM m), " + std::string(state_version_read)));
  CHECK(contains(s->text, " UNION ALL "));
  // Each branch is cut at its share of the bound: the union reads its whole input.
  CHECK(contains(s->text, " LIMIT $5::bigint) AS b) UNION ALL (SELECT id, 1 AS branch"));
  CHECK(s->text.ends_with("HAVING count(*) >= $5::bigint)"));
  REQUIRE(s->params.size() == 5);
  CHECK(param(*s, 5) == std::to_string((max_counted_events + 2) / 2 + 1));
  // Twenty filters read no more than one does (each its part and one row more).
  auto twenty = count_sql(3, std::vector<filter>(20, a), 77);
  REQUIRE(twenty);
  CHECK(param(*twenty, twenty->params.size()) == std::to_string((max_counted_events + 20) / 20 + 1));
  CHECK(20 * std::stoull(param(*twenty, twenty->params.size())) <= max_counted_events + 40);
  // `{}` alone, every event of the community, is counted no further either.
  auto everything = count_sql(3, {filter{}}, 77);
  REQUIRE(everything);
  CHECK(contains(everything->text, " LIMIT $3::bigint) AS m"));
  CHECK(param(*everything, 3) == std::to_string(max_counted_events + 1));
}

TEST_CASE("one author or kind is an equality, so the index keeps its order",
          "[storage][filter_sql]") {
  filter f;
  f.authors = std::vector<bytes32>{filled(0x22)};
  f.kinds = std::vector<std::uint32_t>{1};
  auto s = history_sql(1, {f}, 0, 500);
  REQUIRE(s);
  CHECK(contains(s->text, "e.pubkey = $3::bytea AND e.kind = $4::int"));
  CHECK(param(*s, 3) == "\\x" + to_hex(filled(0x22)));
  CHECK_FALSE(contains(s->text, "ANY"));
  CHECK_FALSE(contains(s->text, "LATERAL"));
}

TEST_CASE("a few authors and kinds are read one index range per pair",
          "[storage][filter_sql]") {
  filter f;
  f.authors = std::vector<bytes32>{filled(0x22), filled(0x33)};
  f.kinds = std::vector<std::uint32_t>{1, 6};
  f.since = 50;
  f.limit = 20;
  auto s = history_sql(1, {f}, 0, 500);
  REQUIRE(s);
  CHECK(contains(s->text, "(SELECT DISTINCT unnest($3::bytea[])) AS a(pubkey) CROSS JOIN"
                          " (SELECT DISTINCT unnest($4::int[])) AS k(kind) CROSS JOIN LATERAL"));
  CHECK(contains(s->text, "e.pubkey = a.pubkey AND e.kind = k.kind AND e.created_at >= $5::bigint"));
  CHECK(contains(s->text, "LIMIT $6::bigint) AS e ORDER BY e.created_at DESC, e.id LIMIT $6::bigint"));
  CHECK(param(*s, 6) == "20");
  CHECK(placeholders_in(s->text) == 6);

  filter kinds_only;
  kinds_only.kinds = std::vector<std::uint32_t>{1, 7};
  auto k = history_sql(1, {kinds_only}, 0, 500);
  REQUIRE(k);
  CHECK(contains(k->text, "(SELECT DISTINCT unnest($3::int[])) AS k(kind) CROSS JOIN LATERAL"));
  CHECK_FALSE(contains(k->text, "a.pubkey"));

  // Too many pairs to walk, or authors alone: one scan with lists.
  filter wide = f;
  wide.kinds = std::vector<std::uint32_t>{};
  for (std::uint32_t kind = 0; kind < 40; ++kind)
    wide.kinds->push_back(kind);
  CHECK_FALSE(contains(history_sql(1, {wide}, 0, 500)->text, "LATERAL"));
  filter authors_only;
  authors_only.authors = f.authors;
  CHECK_FALSE(contains(history_sql(1, {authors_only}, 0, 500)->text, "LATERAL"));
}

TEST_CASE("named authors drive the read even with one tag value", "[storage][filter_sql]") {
  filter f;
  f.authors = std::vector<bytes32>{filled(0x22)};
  f.kinds = std::vector<std::uint32_t>{1};
  f.tags.push_back({'t', {"nostr"}});
  auto s = history_sql(1, {f}, 0, 500);
  REQUIRE(s);
  CHECK(s->text.starts_with("SELECT e.raw FROM events e WHERE "));
  CHECK(contains(s->text, "e.pubkey = $3::bytea AND e.kind = $4::int AND EXISTS"));
}

TEST_CASE("only a read driven by one tag value is marked as having a fixed plan",
          "[storage][filter_sql]") {
  filter by_tag;
  by_tag.tags.push_back({'e', {std::string(64, 'a')}});
  auto tagged = history_sql(1, {by_tag}, 0, 10);
  REQUIRE(tagged);
  CHECK(tagged->fixed_plan);
  CHECK(contains(tagged->text, "FROM event_tags t JOIN events e"));
  // Several values of the tag: the planner weighs them, so each REQ is planned.
  filter two_values;
  two_values.tags.push_back({'e', {std::string(64, 'a'), std::string(64, 'b')}});
  auto several = history_sql(1, {two_values}, 0, 10);
  REQUIRE(several);
  CHECK_FALSE(several->fixed_plan);
  filter by_author;
  by_author.authors = std::vector<bytes32>{filled(1)};
  by_author.kinds = std::vector<std::uint32_t>{1};
  auto authored = history_sql(1, {by_author}, 0, 10);
  REQUIRE(authored);
  CHECK_FALSE(authored->fixed_plan);
  auto both = history_sql(1, {by_tag, by_author}, 0, 10);
  REQUIRE(both);
  CHECK_FALSE(both->fixed_plan);
  auto counted = count_sql(1, {by_tag}, 0);
  REQUIRE(counted);
  CHECK_FALSE(counted->fixed_plan);
  // Counted from the tag rows' copies of their events (migration 49), as a keyed read is.
  CHECK(contains(counted->text, "FROM (SELECT t.community_id, t.event_id AS id"));
  CHECK_FALSE(contains(counted->text, "events e"));
  CHECK(placeholders_in(counted->text) == counted->params.size());
  auto counted_with_kinds = count_sql(1, {by_tag, by_author}, 0);
  REQUIRE(counted_with_kinds);
  CHECK(contains(counted_with_kinds->text, "FROM events e"));
}

TEST_CASE("a later page of a history reply starts at its cursor and counts what was sent",
          "[storage][filter_sql]") {
  filter by_tag;
  by_tag.tags.push_back({'e', {std::string(64, 'a')}});
  by_tag.limit = 100;
  const history_cursor cursor{1234, "\\x0a0b", 60};
  auto later = bounded_history_sql(1, {by_tag}, 0, 500, 65536, history_page{cursor, 50});
  REQUIRE(later);
  CHECK(later->fixed_plan);
  // On the columns the tag-driven read is ordered by, so its index range starts at the cursor.
  CHECK(contains(later->text, "t.created_at <= $5::bigint AND (t.created_at < $5::bigint OR"
                              " t.event_id > $6::bytea)"));
  CHECK(param(*later, 5) == "1234");
  CHECK(param(*later, 6) == "\\x0a0b");
  CHECK(param(*later, 7) == "40"); // 100 - 60 sent, within the page's 50 rows
  // Only a row the reply may go on after names its place: the one reaching the bytes ($8) or
  // the LIMIT's last ($9).
  CHECK(contains(later->text, "SELECT raw, upto, CASE WHEN upto >= $8::bigint OR n = $9::bigint"
                              " THEN created_at END"));
  CHECK(param(*later, 9) == "40");
  // The limit used up by earlier pages: nothing left to ask.
  CHECK_FALSE(bounded_history_sql(1, {by_tag}, 0, 500, 65536, history_page{history_cursor{1, "\\x0a", 100}, 50}));
  // Several filters: the union is read again, after the cursor and bounded by the page's rows.
  filter kinds;
  kinds.kinds = std::vector<std::uint32_t>{1};
  auto several = bounded_history_sql(1, {by_tag, kinds}, 0, 500, 65536, history_page{cursor, 50});
  REQUIRE(several);
  CHECK(contains(several->text, "WHERE m.created_at <= "));
  CHECK(contains(several->text, "ORDER BY m.created_at DESC, m.id LIMIT "));
}

TEST_CASE("a keyed page reads the same rows as a page of bodies, returning ids and row versions",
          "[storage][filter_sql]") {
  filter by_tag;
  by_tag.tags.push_back({'e', {std::string(64, 'a')}});
  filter kinds;
  kinds.kinds = std::vector<std::uint32_t>{1, 7};
  for (const auto& filters : {std::vector{by_tag}, std::vector{kinds}, std::vector{by_tag, kinds}}) {
    const history_page page{history_cursor{5, "\\x0a", 3}, 50};
    auto bodies = bounded_history_sql(1, filters, 0, 500, 65536, page);
    auto keys = bounded_history_keys_sql(1, filters, 0, 500, 65536, page);
    REQUIRE(bodies);
    REQUIRE(keys);
    CHECK(keys->params == bodies->params); // the same values: the same rows, bound and cursor
    CHECK(keys->fixed_plan == bodies->fixed_plan);
    CHECK(keys->text.rfind("SELECT id, v, CASE WHEN", 0) == 0);
    CHECK(placeholders_in(keys->text) == keys->params.size());
    // One tag value alone reads the version, author, expiry and size its tag rows carry
    // (migration 49), and no event row; any other read takes them from the event row.
    const bool tag_rows_only = filters.size() == 1 && !filters[0].tags.empty();
    CHECK(contains(keys->text, "e.version AS v") == tag_rows_only);
    CHECK(contains(keys->text, "events e") != tag_rows_only);
    CHECK(contains(keys->text, "e.xmin") != tag_rows_only);
    CHECK(contains(bodies->text, "events e"));
  }
  CHECK_FALSE(bounded_history_keys_sql(1, {filter{}}, 0, 0, 65536));
}

TEST_CASE("bodies are fetched by community and ids, with their row versions", "[storage][filter_sql]") {
  CHECK_FALSE(event_bodies_sql(3, {}));
  auto s = event_bodies_sql(3, {filled(1), filled(2)});
  REQUIRE(s);
  CHECK(s->text.rfind("SELECT id, xmin, raw FROM events", 0) == 0);
  CHECK(param(*s, 1) == "3");
  // The ids in binary form: a one-dimensional bytea array (a 20-byte header), each element its
  // length and its 32 bytes; the rows come in binary form too.
  CHECK(s->binary_params == std::vector<bool>{false, true});
  CHECK(s->binary_rows);
  const std::string ids = param(*s, 2);
  REQUIRE(ids.size() == 20 + 2 * (4 + 32));
  CHECK(ids.substr(24, 32) == std::string(reinterpret_cast<const char*>(filled(1).data()), 32));
  CHECK(ids.substr(60, 32) == std::string(reinterpret_cast<const char*>(filled(2).data()), 32));
  CHECK(placeholders_in(s->text) == 2);
}
