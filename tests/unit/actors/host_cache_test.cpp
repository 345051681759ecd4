// SPDX-License-Identifier: MIT
// The pod's cache of host lookups: bounded in hits and misses, never kept past a forget, and
// what a flood of made-up hosts leaves a known one.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "actors/gateway/community_directory.hpp"
#include "actors/gateway/gateway_context.hpp"
#include "actors/gateway/host_lookup.hpp"

using namespace comb;

TEST_CASE("the host cache keeps hits and, a second, misses, a bounded number of each", "[actors][directory]") {
  using actors::community_directory;
  actors::community_directory cache(std::chrono::seconds(60));
  actors::host_lookup miss{true, std::nullopt};
  const auto misses = community_directory::max_unknown_entries + 10;
  for (std::size_t i = 0; i < misses; ++i)
    cache.remember("random-" + std::to_string(i) + ".example", miss, cache.generation());
  CHECK(cache.size() <= community_directory::max_unknown_entries);
  const std::string last = "random-" + std::to_string(misses - 1) + ".example";
  auto again = cache.cached(last);
  REQUIRE(again); // asked again within the second: no database query
  CHECK(again->answered);
  CHECK_FALSE(again->community);
  // A lookup that could not be answered (the database away) is never kept.
  cache.remember("down.example", actors::host_lookup{false, std::nullopt}, cache.generation());
  CHECK_FALSE(cache.cached("down.example"));
  actors::host_lookup hit{true, storage::community_row{}};
  cache.remember(last, hit, cache.generation()); // a host known now replaces its miss
  REQUIRE(cache.cached(last));
  CHECK(cache.cached(last)->community);
  cache.forget_all();
  CHECK(cache.size() == 0);
  for (std::size_t i = 0; i < actors::community_directory::max_entries + 10; ++i)
    cache.remember("host-" + std::to_string(i) + ".example", hit, cache.generation());
  CHECK(cache.size() <= actors::community_directory::max_entries);
  CHECK(cache.cached("host-" + std::to_string(actors::community_directory::max_entries + 9) + ".example"));
}

TEST_CASE("an answer read before the cache was forgotten is handed out but not kept", "[actors][directory]") {
  actors::community_directory cache(std::chrono::seconds(60));
  actors::host_lookup active{true, storage::community_row{}};
  auto asked_in = cache.generation();
  cache.forget_all(); // an archive applied while the lookup read the database
  cache.remember("late.example", active, asked_in);
  CHECK_FALSE(cache.cached("late.example"));
  cache.remember("late.example", active, cache.generation());
  CHECK(cache.cached("late.example"));
}

TEST_CASE("one community's change forgets its own hosts only", "[actors][directory]") {
  actors::community_directory cache(std::chrono::seconds(60));
  auto of = [](std::int64_t id) {
    storage::community_row row;
    row.id = id;
    return actors::host_lookup{true, row};
  };
  cache.remember("a.example", of(1), cache.generation());
  cache.remember("alias-a.example", of(1), cache.generation());
  cache.remember("b.example", of(2), cache.generation());
  auto asked_in = cache.generation(); // lookups under way while community 1 changes
  cache.forget_community(1);
  CHECK_FALSE(cache.cached("a.example"));
  CHECK_FALSE(cache.last_known("alias-a.example"));
  REQUIRE(cache.cached("b.example"));
  CHECK(cache.last_known("b.example"));
  cache.remember("a.example", of(1), asked_in); // read before the change: not kept
  CHECK_FALSE(cache.cached("a.example"));
  cache.remember("c.example", of(3), asked_in); // another community's: kept
  CHECK(cache.cached("c.example"));
  cache.remember("a.example", of(1), cache.generation());
  CHECK(cache.cached("a.example"));
  cache.forget_all();
  CHECK_FALSE(cache.cached("b.example"));
  cache.remember("b.example", of(2), asked_in); // read before forget_all: not kept
  CHECK_FALSE(cache.cached("b.example"));
}

TEST_CASE("while lookups are full, a known host keeps its last answer and an unknown one gets 503",
          "[actors][directory]") {
  actors::gateway_context context;
  context.metrics = std::make_shared<actors::relay_metrics>();
  context.communities = std::make_shared<actors::community_directory>(std::chrono::milliseconds(0));
  storage::community_row served;
  served.id = 7;
  context.communities->remember("known.example", {true, served}, context.communities->generation());
  std::this_thread::sleep_for(std::chrono::milliseconds(2)); // its answer has expired
  REQUIRE_FALSE(context.communities->cached("known.example"));
  context.host_lookups_waiting = 256; // a flood of made-up hosts holds every place
  boost::asio::io_context io;
  std::vector<actors::host_lookup> answers;
  for (const char* host : {"known.example", "made-up.example"})
    boost::asio::co_spawn(io, [&, host]() -> boost::asio::awaitable<void> {
      answers.push_back(co_await actors::lookup_host(context, host));
    }, boost::asio::detached);
  io.run();
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].answered);
  REQUIRE(answers[0].community);
  CHECK(answers[0].community->id == 7);
  CHECK_FALSE(answers[1].answered);
  CHECK(context.metrics->host_lookups_stale == 1);
  CHECK(context.metrics->host_lookups_refused == 1);
  CHECK(context.host_lookups_waiting == 256);
  // After a lifecycle change on this pod nothing old is served.
  context.communities->forget_all();
  CHECK_FALSE(context.communities->last_known("known.example"));
}
