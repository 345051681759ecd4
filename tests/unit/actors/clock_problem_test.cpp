// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "actors/community/access_watcher.hpp"

using namespace comb;

TEST_CASE("a pod whose clock is more than 30 s off the database's says how far", "[actors][clock]") {
  actors::relay_metrics metrics;
  CHECK(actors::clock_problem(metrics).empty()); // not measured yet
  metrics.database_clock_known = true;
  metrics.database_clock_offset_ms = 29'000;
  CHECK(actors::clock_problem(metrics).empty());
  metrics.database_clock_offset_ms = 45'000;
  CHECK(actors::clock_problem(metrics) == "this pod's clock is 45 s behind the database's");
  metrics.database_clock_offset_ms = -90'500;
  CHECK(actors::clock_problem(metrics) == "this pod's clock is 90 s ahead of the database's");
}
