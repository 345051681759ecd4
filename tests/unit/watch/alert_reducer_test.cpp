// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "tests/unit/watch/watch_fixtures.hpp"

using namespace comb::watch;
using namespace comb::watch::testing;

namespace {

/// A reducer over `store` that has already taken in a first list of the viewer and `members`.
alert_reducer seeded_reducer(memory_store& store, std::vector<int> members = {2, 3},
                             reducer_rules rules = {}) {
  alert_reducer reducer(viewer, ledger{}, store.saver(), rules);
  REQUIRE(reducer.on_list(list_at(100, members), at_ms(0)) == list_verdict::seeded);
  return reducer;
}

alert single(int n) {
  return {{key(n)}, false};
}

} // namespace

TEST_CASE("the first list seeds silently", "[watch][reducer]") {
  memory_store store;
  alert_reducer reducer(viewer, ledger{}, store.saver());
  CHECK(reducer.on_list(list_at(100, {2, 3, 4}), at_ms(0)) == list_verdict::seeded);
  CHECK_FALSE(reducer.next_flush());
  CHECK(reducer.take_due(at_ms(60'000)).empty());
  REQUIRE(store.saved);
  CHECK(store.saved->seeded());
  CHECK(store.saved->keys() == std::vector{viewer, key(2), key(3), key(4)});
}

TEST_CASE("a community whose only member is the viewer alerts on its first join", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store, {});
  CHECK(reducer.on_list(list_at(101, {7}), at_ms(1000)) == list_verdict::recorded);
  CHECK(reducer.take_due(at_ms(2499)).empty());
  CHECK(reducer.take_due(at_ms(2500)) == std::vector{single(7)});
}

TEST_CASE("a member already recorded never alerts again", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  CHECK(reducer.on_list(list_at(101, {2, 3, 4}), at_ms(0)) == list_verdict::recorded);
  CHECK(reducer.take_due(at_ms(1500)).size() == 1);
  // The same list again (a refetch after an 8000, or replay after a reconnect) and a later one.
  CHECK(reducer.on_list(list_at(101, {2, 3, 4}), at_ms(2000)) == list_verdict::nothing_new);
  CHECK(reducer.on_list(list_at(102, {4, 3, 2}), at_ms(2000)) == list_verdict::nothing_new);
  CHECK_FALSE(reducer.next_flush());
  CHECK(store.writes == 2);
}

TEST_CASE("alerts wait for a 1.5 s trailing quiet window", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  reducer.on_list(list_at(101, {2, 3, 4}), at_ms(0));
  reducer.on_list(list_at(102, {2, 3, 4, 5}), at_ms(1000));
  CHECK(reducer.next_flush() == at_ms(2500));
  CHECK(reducer.take_due(at_ms(2499)).empty());
  CHECK(reducer.take_due(at_ms(2500)) == std::vector{single(4), single(5)});
  CHECK(reducer.take_due(at_ms(9000)).empty());
}

TEST_CASE("a steady drip of joins is delivered after at most 5 s", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  std::vector<int> members = {2, 3};
  for (int i = 0; i < 5; ++i) {
    CHECK(reducer.take_due(at_ms(i * 1200 - 1)).empty());
    members.push_back(10 + i);
    reducer.on_list(list_at(101 + i, members), at_ms(i * 1200));
  }
  // Last join at 4.8 s would push the quiet window to 6.3 s; the cap holds it to 5 s.
  CHECK(reducer.next_flush() == at_ms(5000));
  CHECK(reducer.take_due(at_ms(4999)).empty());
  auto alerts = reducer.take_due(at_ms(5000));
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0].summary);
  CHECK(alerts[0].members == keys({10, 11, 12, 13, 14}));
}

TEST_CASE("up to three joins alert one by one; more become one summary across lists",
          "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  reducer.on_list(list_at(101, {2, 3, 4, 5, 6}), at_ms(0));
  CHECK(reducer.take_due(at_ms(1500)) == std::vector{single(4), single(5), single(6)});

  // Four joins arriving as four growing lists, each inside the previous one's quiet window.
  std::vector<int> members = {2, 3, 4, 5, 6};
  for (int i = 0; i < 4; ++i) {
    members.push_back(20 + i);
    CHECK(reducer.on_list(list_at(102 + i, members), at_ms(10'000 + i * 300))
          == list_verdict::recorded);
  }
  auto alerts = reducer.take_due(at_ms(10'900 + 1500));
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0] == alert{keys({20, 21, 22, 23}), true});
}

TEST_CASE("a list not naming the viewer as manager latches revocation", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  auto recorded = reducer.recorded();
  CHECK(reducer.on_list(list_at(101, {2, 3, 4}, "member"), at_ms(0)) == list_verdict::revoked);
  CHECK(reducer.revoked());
  // Promoted again, with a new join: nothing is alerted or recorded until restart.
  CHECK(reducer.on_list(list_at(102, {2, 3, 4, 5}, "admin"), at_ms(100)) == list_verdict::latched);
  CHECK(reducer.take_due(at_ms(60'000)).empty());
  CHECK(reducer.recorded() == recorded);
  CHECK(store.writes == 1);
  CHECK(store.saved == recorded);
}

TEST_CASE("a list without the viewer at all revokes, and a plain member records nothing",
          "[watch][reducer]") {
  memory_store store;
  alert_reducer member_view(viewer, ledger{}, store.saver());
  CHECK(member_view.on_list(list_at(100, {2, 3}, "member"), at_ms(0)) == list_verdict::revoked);
  CHECK(member_view.on_list(list_at(101, {2, 3, 4}, "member"), at_ms(0)) == list_verdict::latched);
  CHECK(store.writes == 0);
  CHECK_FALSE(member_view.recorded().seeded());

  auto reducer = seeded_reducer(store);
  membership_list gone{101, {{key(2), {"owner"}}}};
  CHECK(reducer.on_list(gone, at_ms(0)) == list_verdict::revoked);
}

TEST_CASE("revocation cancels alerts still waiting for their quiet window", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  reducer.on_list(list_at(101, {2, 3, 4}), at_ms(0));
  reducer.on_list(list_at(102, {2, 3, 4}, "member"), at_ms(500));
  CHECK(reducer.take_due(at_ms(60'000)).empty());
  CHECK(reducer.take_all().empty());
}

TEST_CASE("two lists in the same second: revocation wins in either order", "[watch][reducer]") {
  auto joining = list_at(101, {2, 3, 4});
  auto revoking = list_at(101, {2, 3, 4}, "member");
  SECTION("revoking first") {
    memory_store store;
    auto reducer = seeded_reducer(store);
    CHECK(reducer.on_list(revoking, at_ms(0)) == list_verdict::revoked);
    CHECK(reducer.on_list(joining, at_ms(10)) == list_verdict::latched);
    CHECK_FALSE(reducer.recorded().contains(key(4)));
    CHECK_FALSE(store.saved->contains(key(4)));
    CHECK(reducer.take_due(at_ms(60'000)).empty());
  }
  SECTION("revoking second") {
    memory_store store;
    auto reducer = seeded_reducer(store);
    CHECK(reducer.on_list(joining, at_ms(0)) == list_verdict::recorded);
    CHECK(reducer.on_list(revoking, at_ms(10)) == list_verdict::revoked);
    CHECK(reducer.take_due(at_ms(60'000)).empty());
  }
}

TEST_CASE("lists older than the newest processed are ignored", "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  CHECK(reducer.on_list(list_at(105, {2, 3}), at_ms(0)) == list_verdict::nothing_new);
  CHECK(reducer.on_list(list_at(104, {2, 3, 9}), at_ms(0)) == list_verdict::stale);
  CHECK(reducer.on_list(list_at(104, {2, 3}, "member"), at_ms(0)) == list_verdict::stale);
  CHECK_FALSE(reducer.revoked());
  CHECK_FALSE(reducer.recorded().contains(key(9)));
}

TEST_CASE("a failed ledger write skips the alert, keeps the ledger, and the next list retries",
          "[watch][reducer]") {
  memory_store store;
  auto reducer = seeded_reducer(store);
  auto before = reducer.recorded();
  store.failing = true;
  CHECK(reducer.on_list(list_at(101, {2, 3, 4}), at_ms(0)) == list_verdict::write_failed);
  CHECK(reducer.recorded() == before);
  CHECK(store.saved == before);
  CHECK_FALSE(reducer.next_flush());
  CHECK(reducer.take_due(at_ms(60'000)).empty());

  store.failing = false;
  // The same list republished (same created_at) is the next chance.
  CHECK(reducer.on_list(list_at(101, {2, 3, 4}), at_ms(100)) == list_verdict::recorded);
  CHECK(store.saved->contains(key(4)));
  CHECK(reducer.take_due(at_ms(1600)) == std::vector{single(4)});
}

TEST_CASE("a failed seeding write seeds on the next list, still silently", "[watch][reducer]") {
  memory_store store;
  store.failing = true;
  alert_reducer reducer(viewer, ledger{}, store.saver());
  CHECK(reducer.on_list(list_at(100, {2}), at_ms(0)) == list_verdict::write_failed);
  CHECK_FALSE(reducer.recorded().seeded());
  store.failing = false;
  CHECK(reducer.on_list(list_at(101, {2, 3}), at_ms(0)) == list_verdict::seeded);
  CHECK(reducer.take_due(at_ms(60'000)).empty());
}

TEST_CASE("a restart with the same ledger alerts nothing", "[watch][reducer]") {
  memory_store store;
  {
    auto reducer = seeded_reducer(store);
    reducer.on_list(list_at(101, {2, 3, 4}), at_ms(0));
    CHECK(reducer.take_due(at_ms(1500)).size() == 1);
  }
  alert_reducer restarted(viewer, *store.saved, store.saver());
  // After a restart the fence is gone: the replayed list and an older one are both harmless.
  CHECK(restarted.on_list(list_at(101, {2, 3, 4}), at_ms(0)) == list_verdict::nothing_new);
  CHECK(restarted.take_due(at_ms(60'000)).empty());
}

TEST_CASE("members on the list are never evicted by the departed cap", "[watch][reducer]") {
  memory_store store;
  reducer_rules rules;
  rules.departed_cap = 1;
  auto reducer = seeded_reducer(store, {2, 3, 4, 5}, rules);
  reducer.on_list(list_at(101, {6}), at_ms(0));  // 2..5 depart; one of them is kept
  CHECK(reducer.take_due(at_ms(1500)) == std::vector{single(6)});
  CHECK(reducer.on_list(list_at(102, {6}), at_ms(2000)) == list_verdict::nothing_new);
  CHECK(reducer.recorded().keys().size() == 3);  // viewer, 6 and the newest departed key
}
