// SPDX-License-Identifier: MIT
// Storage-side bounds: history read in chunks, statement_timeout on reader connections and the
// purge of expired invites.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <utility>

#include "protocol/relay_message.hpp"
#include "storage/filter_sql.hpp"
#include "storage/invite_store.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;

namespace {
constexpr std::int64_t now = 1'700'000'000;
}

TEST_CASE_METHOD(test::store_fixture, "a history reply is read in chunks of its byte size, newest first",
                 "[integration][bounds]") {
  test::author alice{1};
  for (int i = 0; i < 10; ++i)
    REQUIRE(test::store_one(events, community, alice.sign(1, now - 100 + i, {}, std::string(1000, 'x'))).result
            == storage::store_outcome::status::stored);
  auto whole = events.query(community, {protocol::filter{}}, now, 100);
  REQUIRE(whole.ok);
  REQUIRE(whole.events.size() == 10);
  std::size_t one = whole.events.front().size();

  std::vector<std::vector<std::string>> chunks;
  auto keep = [&](storage::query_result chunk) {
    CHECK(chunk.ok);
    CHECK_FALSE(chunk.last);
    chunks.push_back(std::move(chunk.events));
    return true;
  };
  auto rest = events.query_chunks(community, {protocol::filter{}}, now, 100, 3 * one + one / 2, keep);
  REQUIRE(rest.ok);
  CHECK(rest.last);
  // A chunk closes at the row that reaches the size: 4 + 4, then the last 2.
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0].size() == 4);
  CHECK(chunks[1].size() == 4);
  std::vector<std::string> joined;
  for (auto& c : chunks)
    joined.insert(joined.end(), c.begin(), c.end());
  joined.insert(joined.end(), rest.events.begin(), rest.events.end());
  CHECK(joined == whole.events);

  SECTION("one event per chunk when a chunk is smaller than an event") {
    chunks.clear();
    auto last = events.query_chunks(community, {protocol::filter{}}, now, 100, 1, keep);
    CHECK(chunks.size() == 10);
    CHECK(last.ok);
    CHECK(last.events.empty());
  }
  SECTION("a handler that stops ends the reply, and the connection stays usable") {
    int calls = 0;
    auto stop = [&](storage::query_result) { return ++calls < 2; };
    auto ended = events.query_chunks(community, {protocol::filter{}}, now, 100, 1, stop);
    CHECK_FALSE(ended.ok);
    CHECK(calls == 2);
    auto again = events.query(community, {protocol::filter{}}, now, 100);
    CHECK(again.events == whole.events);
  }
  SECTION("a reply under the bound comes whole in one result; over it, it stops at the bound") {
    auto read = [&](std::size_t max_bytes) {
      auto bounded = storage::bounded_history_sql(community, {protocol::filter{}}, now, 100, max_bytes);
      REQUIRE(bounded);
      auto reply = connection.exec(bounded->text, bounded->params);
      REQUIRE(reply.ok());
      return reply;
    };
    auto all = read(10 * one + 1);
    REQUIRE(all.rows() == 10);
    for (int row = 0; row < 10; ++row) {
      CHECK(all.text(row, 0) == whole.events[static_cast<std::size_t>(row)]);
      CHECK(all.integer(row, 1) == static_cast<std::int64_t>((row + 1) * one));
      CHECK(all.is_null(row, 2)); // whole: no row to go on after
      CHECK(all.is_null(row, 3));
    }
    // The row that reaches the bound is the last: its running total says rows may be missing,
    // and it alone names its place, where the next page starts.
    auto cut = read(3 * one + one / 2);
    REQUIRE(cut.rows() == 4);
    CHECK(cut.integer(3, 1) >= static_cast<std::int64_t>(3 * one + one / 2));
    CHECK(cut.is_null(2, 2));
    REQUIRE_FALSE(cut.is_null(3, 2));
    CHECK(cut.integer(3, 2) == now - 100 + 6);
    CHECK(cut.text(3, 3).starts_with("\\x"));
    CHECK(read(10 * one).rows() == 10); // exactly the bound: whole, but not known to be
    // query_chunks reads either way and answers the same.
    chunks.clear();
    auto at_bound = events.query_chunks(community, {protocol::filter{}}, now, 100, 10 * one, keep);
    REQUIRE(at_bound.ok);
    CHECK(chunks.size() == 1);
    CHECK(chunks.front() == whole.events);
    auto under = events.query_chunks(community, {protocol::filter{}}, now, 100, 10 * one + 1, keep);
    CHECK(under.events == whole.events);
  }
  SECTION("shared, each row comes as its JSON in `shared`, the chunks cut at the same rows") {
    chunks.clear();
    std::vector<std::size_t> text_counts;
    auto keep_shared = [&](storage::query_result chunk) {
      text_counts.push_back(chunk.events.size());
      std::vector<std::string> jsons;
      for (const auto& json : chunk.shared)
        jsons.push_back(*json);
      chunks.push_back(std::move(jsons));
      return true;
    };
    auto shared = events.query_chunks(community, {protocol::filter{}}, now, 100, 3 * one + one / 2,
                                      keep_shared, true);
    REQUIRE(shared.ok);
    CHECK(shared.events.empty());
    REQUIRE(chunks.size() == 2);
    CHECK(chunks[0].size() == 4);
    CHECK(std::all_of(text_counts.begin(), text_counts.end(), [](auto n) { return n == 0; }));
    std::vector<std::string> all;
    for (auto& c : chunks)
      all.insert(all.end(), c.begin(), c.end());
    for (const auto& json : shared.shared)
      all.push_back(*json);
    CHECK(all == whole.events);
    CHECK(storage::bytes_of(shared) == 2 * one);
  }
}

namespace {

/// Newest first, same second lowest id first: the order of every history reply.
std::vector<test::event_ptr> reply_order(std::vector<test::event_ptr> events) {
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a->created_at != b->created_at ? a->created_at > b->created_at : a->id < b->id;
  });
  return events;
}

/// Everything query_chunks hands over, chunks and final part joined, in order.
std::vector<std::string> read_in_chunks(storage::event_store& events, std::int64_t community,
                                        const std::vector<protocol::filter>& filters,
                                        std::size_t chunk_bytes,
                                        const std::function<void()>& between = [] {}) {
  std::vector<std::string> joined;
  auto keep = [&](storage::query_result chunk) {
    joined.insert(joined.end(), chunk.events.begin(), chunk.events.end());
    between();
    return true;
  };
  auto rest = events.query_chunks(community, filters, now, 100, chunk_bytes, keep);
  REQUIRE(rest.ok);
  joined.insert(joined.end(), rest.events.begin(), rest.events.end());
  return joined;
}

} // namespace

TEST_CASE_METHOD(test::store_fixture, "a reply over several pages goes on after the last row sent",
                 "[integration][bounds]") {
  // Three events a second, so that pages end inside a second and the cursor's id decides.
  test::author alice{1};
  test::author bob{2};
  std::vector<test::event_ptr> stored;
  for (int i = 0; i < 30; ++i) {
    const auto& who = i % 2 == 0 ? alice : bob;
    stored.push_back(who.sign(i % 5 == 0 ? 7 : 1, now - 1000 + 2 * (i / 3), {{"t", "x"}},
                              std::string(1000, static_cast<char>('a' + i % 26))));
    REQUIRE(test::store_one(events, community, stored.back()).result == storage::store_outcome::status::stored);
  }
  const auto expected = reply_order(stored);
  const std::size_t one = test::json_of(stored.front()).size();
  auto first = [&](std::size_t n) {
    return test::jsons_of({expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(n)});
  };

  SECTION("every row once, in order, whatever the page size") {
    for (std::size_t rows_per_page : {1, 2, 3, 4, 7, 29, 30, 31})
      CHECK(read_in_chunks(events, community, {protocol::filter{}}, rows_per_page * one - one / 2)
            == first(30));
  }
  SECTION("a filter's limit counts the rows of every page") {
    protocol::filter limited;
    limited.limit = 10;
    CHECK(read_in_chunks(events, community, {limited}, 3 * one + one / 2) == first(10));
    limited.limit = 8; // a page ends exactly at the limit: no page after it
    CHECK(read_in_chunks(events, community, {limited}, 4 * one - one / 2) == first(8));
  }
  SECTION("the plans of the benchmark's shapes: tag-driven and per (author, kind) range") {
    protocol::filter tagged;
    tagged.tags.push_back({'t', {"x"}});
    CHECK(read_in_chunks(events, community, {tagged}, 3 * one + one / 2) == first(30));
    protocol::filter ranged;
    ranged.authors = std::vector<protocol::bytes32>{alice.pubkey(), bob.pubkey()};
    ranged.kinds = std::vector<std::uint32_t>{1, 7};
    ranged.limit = 20;
    CHECK(read_in_chunks(events, community, {ranged}, 3 * one + one / 2) == first(20));
  }
  SECTION("several filters: each keeps its own limit, their union is read page by page") {
    protocol::filter sevens;
    sevens.kinds = std::vector<std::uint32_t>{7};
    protocol::filter newest;
    newest.limit = 9;
    std::vector<test::event_ptr> wanted;
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (i < 9 || expected[i]->kind == 7)
        wanted.push_back(expected[i]);
    CHECK(read_in_chunks(events, community, {sevens, newest}, 2 * one + one / 2)
          == test::jsons_of(wanted));
  }
  SECTION("a row committed between two pages is read if it sorts after the cursor") {
    protocol::filter limited;
    limited.limit = 10;
    // Stored once the first page (4 rows) is read, in a second of its own after the 9th row:
    // the later page finds it, and the limit still holds (the oldest of the ten is no longer
    // among the newest ten).
    auto late = alice.sign(1, expected[8]->created_at - 1, {}, std::string(1000, 'z'));
    bool stored_late = false;
    auto store_late = [&] {
      if (!std::exchange(stored_late, true))
        REQUIRE(test::store_one(events, community, late).result == storage::store_outcome::status::stored);
    };
    auto reply = read_in_chunks(events, community, {limited}, 4 * one - one / 2, store_late);
    REQUIRE(stored_late);
    std::vector<test::event_ptr> wanted(expected.begin(), expected.begin() + 9);
    wanted.push_back(late);
    CHECK(reply == test::jsons_of(wanted));
  }
  SECTION("a page cut by its row bound goes on too (smaller rows than the page before)") {
    // Older and much smaller than the 30: a page sized by their rows' bytes ends by row count.
    std::vector<test::event_ptr> all = stored;
    for (int i = 0; i < 40; ++i) {
      all.push_back(alice.sign(1, now - 5000 + i / 2, {}, std::to_string(i)));
      REQUIRE(test::store_one(events, community, all.back()).result == storage::store_outcome::status::stored);
    }
    CHECK(read_in_chunks(events, community, {protocol::filter{}}, 10 * one)
          == test::jsons_of(reply_order(all)));
  }
}

TEST_CASE_METHOD(test::store_fixture, "reader connections cancel statements past statement_timeout",
                 "[integration][bounds]") {
  storage::pg_reconnect_policy policy;
  policy.statement_timeout_ms = 200;
  storage::pg_connection reader(database.conninfo(), policy);
  auto slow = reader.exec("SELECT pg_sleep(2)");
  CHECK_FALSE(slow.ok());
  CHECK_THAT(slow.error(), Catch::Contains("statement timeout"));
  CHECK(reader.exec("SELECT 1").ok()); // the connection itself is fine
}

TEST_CASE_METHOD(test::store_fixture, "expired invites are purged, live ones kept",
                 "[integration][bounds]") {
  auto add = [&](const std::string& hash, std::int64_t expires) {
    REQUIRE(connection.exec("INSERT INTO invites (community_id, code_hash, expires_at) VALUES ($1::bigint, $2, $3::bigint)",
                            {std::to_string(community), hash, std::to_string(expires)}).ok());
  };
  for (int i = 0; i < 1500; ++i)
    add("old" + std::to_string(i), now - 10);
  add("live", now + 3600);
  storage::invite_store invites(connection);
  CHECK(invites.purge_expired(now) == 1500);
  CHECK(test::scalar(connection, "SELECT string_agg(code_hash, ',') FROM invites") == "live");
  CHECK(invites.purge_expired(now) == 0);
}

TEST_CASE_METHOD(test::store_fixture, "a COUNT of several filters shares its bound among them, approximate when one fills its part",
                 "[integration][bounds]") {
  test::author alice{1};
  test::author bob{2};
  for (int i = 0; i < 6; ++i) {
    REQUIRE(test::store_one(events, community, alice.sign(1, now - 100 + i)).result == storage::store_outcome::status::stored);
    REQUIRE(test::store_one(events, community, bob.sign(7, now - 100 + i)).result == storage::store_outcome::status::stored);
  }
  protocol::filter notes;
  notes.kinds = std::vector<std::uint32_t>{1};
  protocol::filter by_alice;
  by_alice.authors = std::vector<protocol::bytes32>{alice.pubkey()};
  protocol::filter reactions;
  reactions.kinds = std::vector<std::uint32_t>{7};
  auto count = [&](const std::vector<protocol::filter>& filters, std::uint64_t at_most) {
    auto statement = storage::count_sql(community, filters, now, {}, at_most);
    REQUIRE(statement);
    auto reply = connection.exec(statement->text, statement->params);
    REQUIRE(reply.ok());
    return std::pair{reply.integer(0, 0), reply.text(0, 2) == "t"};
  };
  // Overlapping filters count each event once; under every share, exact.
  CHECK(count({notes, by_alice, reactions}, 30) == std::pair<std::int64_t, bool>{12, false});
  // Shares of 10 (bound 19, two filters): 6 and 6, exact.
  CHECK(count({notes, reactions}, 19) == std::pair<std::int64_t, bool>{12, false});
  // Shares of 6 (bound 11): each filter matches exactly its share, exact still.
  CHECK(count({notes, reactions}, 11) == std::pair<std::int64_t, bool>{12, false});
  // Shares of 4 (bound 10, three filters): each branch stops past 4, the count is a lower bound.
  auto [counted, approximate] = count({notes, by_alice, reactions}, 10);
  CHECK(counted <= 12);
  CHECK(approximate);
  // One filter: cut at the bound plus one, which says more exist.
  CHECK(count({notes}, 3) == std::pair<std::int64_t, bool>{4, false});
  CHECK(count({notes}, 6) == std::pair<std::int64_t, bool>{6, false});
}
