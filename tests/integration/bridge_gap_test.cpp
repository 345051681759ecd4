// SPDX-License-Identifier: MIT
// The stored events a pod hands its subscribers after its bridge was cut (bridge_gap.cpp): those
// of one community created since a time, oldest first, bounded, never expired ones.
#include <catch2/catch.hpp>

#include "storage/bridge_gap.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::json_of;
using comb::test::store_one;

namespace {

constexpr std::int64_t now = 1'700'000'000;

} // namespace

TEST_CASE_METHOD(test::store_fixture, "the gap's events: since a time, oldest first, bounded, unexpired",
                 "[integration][bridge]") {
  author alice{21};
  auto before = alice.sign(1, now - 100);
  auto first = alice.sign(1, now - 30);
  auto second = alice.sign(1, now - 20);
  auto expired = alice.sign(1, now - 10, {{"expiration", std::to_string(now - 1)}});
  auto third = alice.sign(1, now - 5);
  for (const auto& ev : {before, first, second, expired, third})
    (void)store_one(events, community, ev);
  auto other = add_community("other.example");
  (void)store_one(events, other, alice.sign(1, now - 15, {}, "elsewhere"));

  auto gap = storage::load_recent_events(connection, community, now - 30, now, 10);
  REQUIRE(gap);
  CHECK(*gap == std::vector<std::string>{json_of(first), json_of(second), json_of(third)});

  auto bounded = storage::load_recent_events(connection, community, now - 30, now, 2);
  REQUIRE(bounded);
  CHECK(*bounded == std::vector<std::string>{json_of(first), json_of(second)});
}
