// SPDX-License-Identifier: MIT
#include <algorithm>
#include <catch2/catch.hpp>

#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::event_ptr;
using comb::test::json_of;
using comb::test::jsons_of;
using comb::test::store_one;

namespace {

constexpr std::int64_t now = 1'700'000'000;
constexpr std::uint32_t default_limit = 100;

struct query_fixture : test::store_fixture {
  author alice{1};
  author bob{2};

  void store_all(const std::vector<event_ptr>& batch, std::int64_t into = 0) {
    std::vector<storage::event_write> writes;
    for (const auto& ev : batch)
      writes.push_back(test::write_of(into ? into : community, ev));
    for (const auto& outcome : events.store_batch(writes)) {
      INFO(outcome.message);
      REQUIRE(outcome.result == storage::store_outcome::status::stored);
    }
  }

  std::vector<std::string> find(const std::vector<protocol::filter>& filters,
                                std::int64_t in = 0) {
    auto result = events.query(in ? in : community, filters, now, default_limit);
    INFO(result.error);
    REQUIRE(result.ok);
    return result.events;
  }

  std::uint64_t how_many(const std::vector<protocol::filter>& filters, std::int64_t in = 0) {
    auto result = events.count(in ? in : community, filters, now);
    INFO(result.error);
    REQUIRE(result.ok);
    return result.count;
  }
};

protocol::filter with_kinds(std::vector<std::uint32_t> kinds) {
  protocol::filter f;
  f.kinds = std::move(kinds);
  return f;
}

} // namespace

TEST_CASE_METHOD(query_fixture, "a stored event comes back exactly as given",
                 "[integration][event_store]") {
  auto ev = alice.sign(1, now - 10, {{"t", "hello"}}, "quotes \" and \\ and \n and \u00e9");
  REQUIRE(store_one(events, community, ev).result == storage::store_outcome::status::stored);
  CHECK(find({protocol::filter{}}) == std::vector{json_of(ev)});
}

TEST_CASE_METHOD(query_fixture, "filters select by ids, authors and kinds",
                 "[integration][event_store]") {
  auto a1 = alice.sign(1, now - 30);
  auto a7 = alice.sign(7, now - 20);
  auto b1 = bob.sign(1, now - 10);
  store_all({a1, a7, b1});

  protocol::filter by_id;
  by_id.ids = std::vector{a7->id, b1->id};
  std::sort(by_id.ids->begin(), by_id.ids->end());
  CHECK(find({by_id}) == jsons_of({b1, a7}));

  protocol::filter by_author;
  by_author.authors = std::vector{alice.pubkey()};
  CHECK(find({by_author}) == jsons_of({a7, a1}));

  CHECK(find({with_kinds({1})}) == jsons_of({b1, a1}));

  protocol::filter combined = with_kinds({1});
  combined.authors = std::vector{alice.pubkey()};
  CHECK(find({combined}) == jsons_of({a1}));
}

TEST_CASE_METHOD(query_fixture, "tag filters match single-letter tags by value, escaping included",
                 "[integration][event_store]") {
  const std::string tricky = "a,b {c} \"d\" \\e NULL";
  auto plain = alice.sign(1, now - 30, {{"t", "bees"}});
  auto odd = alice.sign(1, now - 20, {{"t", tricky}, {"p", bob.pubkey_hex()}});
  auto other = alice.sign(1, now - 10, {{"x", "bees"}, {"tt", "bees"}});
  store_all({plain, odd, other});

  protocol::filter by_t;
  by_t.tags.push_back({'t', {"bees"}});
  CHECK(find({by_t}) == jsons_of({plain}));

  protocol::filter by_tricky;
  by_tricky.tags.push_back({'t', {tricky}});
  CHECK(find({by_tricky}) == jsons_of({odd}));

  protocol::filter both; // conditions on two tags are AND, values within one are OR
  both.tags.push_back({'p', {bob.pubkey_hex()}});
  both.tags.push_back({'t', {"bees", tricky}});
  std::sort(both.tags[1].values.begin(), both.tags[1].values.end());
  CHECK(find({both}) == jsons_of({odd}));

  protocol::filter nothing;
  nothing.tags.push_back({'t', {"wasps"}});
  CHECK(find({nothing}).empty());
}

TEST_CASE_METHOD(query_fixture, "unindexable tag values are stored but never match",
                 "[integration][event_store]") {
  std::string with_nul("a\0b", 3);
  std::string long_value(600, 'v');
  auto ev = alice.sign(1, now - 5, {{"t", with_nul}, {"t", long_value}, {"t", "short"}});
  REQUIRE(store_one(events, community, ev).result == storage::store_outcome::status::stored);
  protocol::filter f;
  f.tags.push_back({'t', {"short"}});
  CHECK(find({f}) == jsons_of({ev}));
  f.tags.front().values = {long_value};
  CHECK(find({f}).empty());
}

TEST_CASE_METHOD(query_fixture, "since and until bound created_at inclusively",
                 "[integration][event_store]") {
  auto e1 = alice.sign(1, 100);
  auto e2 = alice.sign(1, 200);
  auto e3 = alice.sign(1, 300);
  store_all({e1, e2, e3});
  protocol::filter f;
  f.since = 200;
  CHECK(find({f}) == jsons_of({e3, e2}));
  f.until = 200;
  CHECK(find({f}) == jsons_of({e2}));
  f.since.reset();
  CHECK(find({f}) == jsons_of({e2, e1}));
}

TEST_CASE_METHOD(query_fixture, "newest first, same second lowest id first, then the limit",
                 "[integration][event_store]") {
  auto [low, high] = test::same_second_pair(alice, 1, now - 50);
  auto older = alice.sign(1, now - 60);
  auto newest = alice.sign(1, now - 40);
  store_all({high, older, newest, low});
  CHECK(find({protocol::filter{}}) == jsons_of({newest, low, high, older}));
  protocol::filter limited;
  limited.limit = 2;
  CHECK(find({limited}) == jsons_of({newest, low}));
  limited.limit = 0;
  CHECK(find({limited}).empty());
  auto defaulted = events.query(community, {protocol::filter{}}, now, 3);
  REQUIRE(defaulted.ok);
  CHECK(defaulted.events == jsons_of({newest, low, high}));
}

TEST_CASE_METHOD(query_fixture, "several filters are OR, each limited, without duplicates",
                 "[integration][event_store]") {
  auto a1 = alice.sign(1, 10);
  auto a2 = alice.sign(1, 20);
  auto b1 = bob.sign(1, 30);
  auto b7 = bob.sign(7, 40);
  store_all({a1, a2, b1, b7});
  protocol::filter alice_latest;
  alice_latest.authors = std::vector{alice.pubkey()};
  alice_latest.limit = 1;
  protocol::filter kind_one = with_kinds({1});
  CHECK(find({alice_latest, kind_one}) == jsons_of({b1, a2, a1}));
  CHECK(find({alice_latest, with_kinds({7})}) == jsons_of({b7, a2}));
  CHECK(how_many({alice_latest, kind_one}) == 3);
}

TEST_CASE_METHOD(query_fixture, "count counts distinct matches and ignores limits",
                 "[integration][event_store]") {
  store_all({alice.sign(1, 1), alice.sign(1, 2), bob.sign(1, 3), bob.sign(3, 4)});
  protocol::filter limited = with_kinds({1});
  limited.limit = 1;
  CHECK(how_many({limited}) == 3);
  protocol::filter by_bob;
  by_bob.authors = std::vector{bob.pubkey()};
  CHECK(how_many({by_bob}) == 2);
  CHECK(how_many({by_bob, with_kinds({1})}) == 4);
  CHECK(how_many({with_kinds({})}) == 0);
  CHECK(how_many({protocol::filter{}}) == 4);
}

TEST_CASE_METHOD(query_fixture, "an event in one community never shows in another",
                 "[integration][event_store]") {
  auto other = add_community("b.example");
  auto ev = alice.sign(1, now - 1, {{"t", "x"}});
  store_all({ev});
  protocol::filter by_id;
  by_id.ids = std::vector{ev->id};
  protocol::filter by_tag;
  by_tag.tags.push_back({'t', {"x"}});
  for (const auto& f : {protocol::filter{}, by_id, by_tag}) {
    CHECK(find({f}, community) == jsons_of({ev}));
    CHECK(find({f}, other).empty());
    CHECK(how_many({f}, other) == 0);
  }
  // The same event may live in both, independently.
  store_all({ev}, other);
  CHECK(find({by_id}, other) == jsons_of({ev}));
  CHECK(how_many({protocol::filter{}}) == 1);
}

TEST_CASE_METHOD(query_fixture, "authors and kinds read per index range keep one order and limit",
                 "[integration][event_store]") {
  author carol{3};
  auto a1 = alice.sign(1, now - 60);
  auto b7 = bob.sign(7, now - 50);
  auto [low, high] = test::same_second_pair(alice, 7, now - 40);
  auto c1 = carol.sign(1, now - 30); // an author not asked for
  auto b1 = bob.sign(1, now - 20);
  auto a6 = alice.sign(6, now - 10); // a kind not asked for
  store_all({a1, b7, low, high, c1, b1, a6});

  protocol::filter pairs = with_kinds({1, 7});
  pairs.authors = std::vector{alice.pubkey(), bob.pubkey()};
  std::sort(pairs.authors->begin(), pairs.authors->end());
  CHECK(find({pairs}) == jsons_of({b1, low, high, b7, a1}));
  pairs.limit = 3;
  CHECK(find({pairs}) == jsons_of({b1, low, high}));
  CHECK(find({pairs, with_kinds({6})}) == jsons_of({a6, b1, low, high}));
  CHECK(how_many({pairs}) == 5);

  protocol::filter kinds_only = with_kinds({6, 7});
  kinds_only.limit = 2;
  CHECK(find({kinds_only}) == jsons_of({a6, low}));
}

TEST_CASE_METHOD(query_fixture, "one tag value reads newest first, with the filter's other conditions",
                 "[integration][event_store]") {
  const std::string root(64, 'a'), other_root(64, 'b');
  auto r1 = alice.sign(1, now - 50, {{"e", root}});
  auto r7 = bob.sign(7, now - 30, {{"e", root}, {"p", alice.pubkey_hex()}});
  auto elsewhere = alice.sign(1, now - 20, {{"e", other_root}});
  auto twice = bob.sign(1, now - 10, {{"e", root}, {"e", root}}); // one tag row, one result
  store_all({r1, r7, elsewhere, twice});

  protocol::filter replies;
  replies.tags.push_back({'e', {root}});
  CHECK(find({replies}) == jsons_of({twice, r7, r1}));
  replies.limit = 2;
  CHECK(find({replies}) == jsons_of({twice, r7}));
  replies.limit.reset();
  replies.kinds = std::vector<std::uint32_t>{1};
  CHECK(find({replies}) == jsons_of({twice, r1}));
  replies.kinds.reset();
  replies.tags.push_back({'p', {alice.pubkey_hex()}});
  CHECK(find({replies}) == jsons_of({r7}));
  CHECK(how_many({replies}) == 1);
}
