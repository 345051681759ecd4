// SPDX-License-Identifier: MIT
#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>

#include "storage/event_store.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::check_outcome;
using comb::test::event_ptr;
using comb::test::json_of;
using comb::test::jsons_of;
using comb::test::store_one;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

struct replace_fixture : test::store_fixture {
  author alice{3};

  std::vector<std::string> live(std::uint32_t kind) {
    protocol::filter f;
    f.kinds = std::vector{kind};
    auto result = events.query(community, {f}, now, 100);
    REQUIRE(result.ok);
    return result.events;
  }
};

} // namespace

TEST_CASE_METHOD(replace_fixture, "storing an event twice is a duplicate",
                 "[integration][event_store]") {
  auto ev = alice.sign(1, now);
  check_outcome(store_one(events, community, ev), status::stored, "");
  check_outcome(store_one(events, community, ev), status::duplicate,
                  "duplicate: already have this event");
  // Twice in one batch: stored once, then a duplicate.
  auto twin = alice.sign(1, now + 1);
  std::vector writes{test::write_of(community, twin), test::write_of(community, twin)};
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 2);
  check_outcome(outcomes[0], status::stored, "");
  check_outcome(outcomes[1], status::duplicate, "duplicate: already have this event");
  CHECK(live(1).size() == 2);
}

TEST_CASE_METHOD(replace_fixture, "a replaceable event keeps only its newest version",
                 "[integration][event_store]") {
  auto older = alice.sign(0, now - 10, {}, "old profile");
  auto newer = alice.sign(0, now, {}, "new profile");
  SECTION("older first") {
    check_outcome(store_one(events, community, older), status::stored, "");
    check_outcome(store_one(events, community, newer), status::stored, "");
  }
  SECTION("newer first") {
    check_outcome(store_one(events, community, newer), status::stored, "");
    check_outcome(store_one(events, community, older), status::duplicate,
                    "duplicate: have a newer version");
  }
  SECTION("both in one batch, older last") {
    std::vector writes{test::write_of(community, newer), test::write_of(community, older)};
    auto outcomes = events.store_batch(writes);
    check_outcome(outcomes.at(0), status::stored, "");
    check_outcome(outcomes.at(1), status::duplicate, "duplicate: have a newer version");
  }
  SECTION("both in one batch, older first") {
    std::vector writes{test::write_of(community, older), test::write_of(community, newer)};
    auto outcomes = events.store_batch(writes);
    // The older one is never inserted: accepted, but neither delivered live nor bridged.
    check_outcome(outcomes.at(0), status::applied, "");
    check_outcome(outcomes.at(1), status::stored, "");
  }
  CHECK(live(0) == std::vector{json_of(newer)});
  protocol::filter by_id;
  by_id.ids = std::vector{older->id};
  auto result = events.query(community, {by_id}, now, 10);
  REQUIRE(result.ok);
  CHECK(result.events.empty());
}

TEST_CASE_METHOD(replace_fixture, "in the same second the lowest id wins, in either order",
                 "[integration][event_store]") {
  auto [low, high] = test::same_second_pair(alice, 10002, now);
  SECTION("high id first") {
    check_outcome(store_one(events, community, high), status::stored, "");
    check_outcome(store_one(events, community, low), status::stored, "");
  }
  SECTION("low id first") {
    check_outcome(store_one(events, community, low), status::stored, "");
    check_outcome(store_one(events, community, high), status::duplicate,
                    "duplicate: have a newer version");
  }
  CHECK(live(10002) == std::vector{json_of(low)});
}

TEST_CASE_METHOD(replace_fixture, "addressable events are keyed by their d tag",
                 "[integration][event_store]") {
  auto first_a = alice.sign(30023, now - 5, {{"d", "a"}}, "a1");
  auto only_b = alice.sign(30023, now - 4, {{"d", "b"}}, "b1");
  auto no_d = alice.sign(30023, now - 3, {}, "empty d");
  auto second_a = alice.sign(30023, now - 2, {{"d", "a"}}, "a2");
  auto long_d = alice.sign(30023, now - 1, {{"d", std::string(2000, 'z')}}, "long d");
  auto long_d_newer = alice.sign(30023, now, {{"d", std::string(2000, 'z')}}, "long d 2");
  for (const auto& ev : {first_a, only_b, no_d, second_a, long_d, long_d_newer})
    check_outcome(store_one(events, community, ev), status::stored, "");
  CHECK(live(30023) == jsons_of({long_d_newer, second_a, no_d, only_b}));
  // Another author's same d is another address.
  author bob{4};
  auto bobs = bob.sign(30023, now - 100, {{"d", "a"}});
  check_outcome(store_one(events, community, bobs), status::stored, "");
  // And the same d under another kind, too.
  auto other_kind = alice.sign(30024, now - 100, {{"d", "a"}});
  check_outcome(store_one(events, community, other_kind), status::stored, "");
  check_outcome(store_one(events, community, first_a), status::duplicate,
                  "duplicate: have a newer version");
}

TEST_CASE("two connections racing on one address end with the newest version only",
          "[integration][event_store]") {
  test::store_fixture fixture;
  author alice{5};
  constexpr int versions_per_writer = 25;
  std::vector<event_ptr> odd, even;
  for (int i = 0; i < 2 * versions_per_writer; ++i)
    (i % 2 ? odd : even).push_back(alice.sign(10000, now + i, {}, std::to_string(i)));
  auto writer = [&](const std::vector<event_ptr>& mine, std::vector<status>& seen) {
    storage::pg_connection connection(fixture.database.conninfo());
    storage::event_store store(connection);
    for (const auto& ev : mine)
      seen.push_back(test::store_one(store, fixture.community, ev).result);
  };
  std::vector<status> seen_odd, seen_even;
  {
    std::jthread a([&] { writer(odd, seen_odd); });
    std::jthread b([&] { writer(even, seen_even); });
  }
  for (const auto& seen : {seen_odd, seen_even})
    for (auto s : seen)
      CHECK((s == status::stored || s == status::duplicate));
  protocol::filter f;
  f.kinds = std::vector<std::uint32_t>{10000};
  auto result = fixture.events.query(fixture.community, {f}, now, 100);
  REQUIRE(result.ok);
  CHECK(result.events == std::vector{json_of(odd.back())});
  CHECK(test::scalar(fixture.connection, "SELECT count(*) FROM events") == "1");
}

TEST_CASE("batches naming the same addresses in opposite orders never deadlock",
          "[integration][event_store]") {
  test::store_fixture fixture;
  std::vector<author> authors;
  for (std::uint8_t seed = 10; seed < 30; ++seed)
    authors.emplace_back(seed);
  auto batch_for = [&](std::int64_t created_at, bool reversed) {
    std::vector<storage::event_write> writes;
    for (const auto& a : authors)
      writes.push_back(
        test::write_of(fixture.community, a.sign(0, created_at, {}, reversed ? "b" : "a")));
    if (reversed)
      std::reverse(writes.begin(), writes.end());
    return writes;
  };
  auto run = [&](bool reversed, std::vector<status>& seen) {
    storage::pg_connection connection(fixture.database.conninfo());
    storage::event_store store(connection);
    for (std::int64_t round = 0; round < 10; ++round)
      for (const auto& outcome : store.store_batch(batch_for(now + round, reversed)))
        seen.push_back(outcome.result);
  };
  std::vector<status> forward, backward;
  {
    std::jthread a([&] { run(false, forward); });
    std::jthread b([&] { run(true, backward); });
  }
  CHECK(std::count(forward.begin(), forward.end(), status::failed) == 0);
  CHECK(std::count(backward.begin(), backward.end(), status::failed) == 0);
  // One live version per author: the last round's.
  CHECK(test::scalar(fixture.connection, "SELECT count(*) FROM events WHERE created_at = $1",
                     {std::to_string(now + 9)})
        == std::to_string(authors.size()));
  CHECK(test::scalar(fixture.connection, "SELECT count(*) FROM events")
        == std::to_string(authors.size()));
}

TEST_CASE_METHOD(replace_fixture, "a version whose expiration passed, not purged yet, is replaced by an older one",
                 "[integration][event_store]") {
  // The fixture's clock is 2023; the database's is now, past the first expiration and well
  // before the second.
  auto lapsed = alice.sign(0, now, {{"expiration", std::to_string(now + 100)}}, "lapsed profile");
  auto lasting = alice.sign(3, now, {{"expiration", "4000000000"}}, "lasting follows");
  check_outcome(store_one(events, community, lapsed), status::stored, "");
  check_outcome(store_one(events, community, lasting), status::stored, "");
  auto older_profile = alice.sign(0, now - 10, {}, "older profile");
  auto older_follows = alice.sign(3, now - 10, {}, "older follows");
  auto replaced = store_one(events, community, older_profile);
  check_outcome(replaced, status::stored, "");
  CHECK(replaced.replaced);
  check_outcome(store_one(events, community, older_follows), status::duplicate,
                "duplicate: have a newer version");
  CHECK(live(0) == std::vector{json_of(older_profile)});
  CHECK(live(3) == std::vector{json_of(lasting)});
}

TEST_CASE_METHOD(replace_fixture, "a profile load of more authors than the default limit, without limit, gets every profile",
                 "[integration][event_store]") {
  std::vector<std::string> stored;
  protocol::filter f;
  f.kinds = std::vector<std::uint32_t>{0};
  f.authors.emplace();
  for (std::uint8_t seed = 40; seed < 48; ++seed) {
    author someone{seed};
    auto profile = someone.sign(0, now - seed);
    check_outcome(store_one(events, community, profile), status::stored, "");
    stored.push_back(json_of(profile));
    f.authors->push_back(someone.pubkey());
  }
  std::sort(f.authors->begin(), f.authors->end());
  auto notes = f;
  notes.kinds = std::vector<std::uint32_t>{0, 1};
  auto profiles = events.query(community, {f}, now, 5);
  REQUIRE(profiles.ok);
  CHECK(profiles.events == stored); // newest first: the lower seeds
  auto mixed = events.query(community, {notes}, now, 5);
  REQUIRE(mixed.ok);
  CHECK(mixed.events.size() == 5); // notes are not bounded per author: the default holds
}
