// SPDX-License-Identifier: MIT
// The watch over the actors a pod cannot serve without, on CAF's deterministic scheduler.
#include <catch2/catch.hpp>

#include "actors/community/community_registry.hpp"
#include "actors/vital_watch.hpp"
#include "test_system.hpp"

using namespace comb::actors;

namespace {

struct watched : comb::test::test_system {
  std::vector<std::string> losses;
  caf::actor reader, writer, watch;

  watched() {
    auto idle = [](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; };
    reader = system->spawn(idle);
    writer = system->spawn(idle);
    watch = watch_vital_actors(*system, {{"storage reader 0", reader}, {"storage writer 0", writer}},
                               [this](const std::string& what) { losses.push_back(what); });
    scheduler->run();
  }
  ~watched() {
    for (auto* a : {&reader, &writer, &watch})
      caf::anon_send_exit(*a, caf::exit_reason::user_shutdown);
    scheduler->run();
  }
};

} // namespace

TEST_CASE("a vital actor that ends while the pod runs is reported once, by name", "[actor][vital]") {
  watched w;
  caf::anon_send_exit(w.reader, caf::exit_reason::unhandled_exception);
  w.scheduler->run();
  REQUIRE(w.losses.size() == 1);
  CHECK(w.losses.front().find("storage reader 0 ended") == 0);
  caf::anon_send_exit(w.writer, caf::exit_reason::unhandled_exception);
  w.scheduler->run();
  CHECK(w.losses.size() == 1); // the pod is stopping already
}

TEST_CASE("once the watch is told to exit, the pod's own shutdown is not a loss", "[actor][vital]") {
  watched w;
  caf::anon_send_exit(w.watch, caf::exit_reason::user_shutdown);
  w.scheduler->run();
  caf::anon_send_exit(w.reader, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(w.writer, caf::exit_reason::user_shutdown);
  w.scheduler->run();
  CHECK(w.losses.empty());
}

TEST_CASE("a community actor that ends while the pod runs is reported; one told to exit is not",
          "[actor][vital]") {
  comb::test::test_system t;
  std::vector<std::string> losses;
  community_registry registry(*t.system, {}, {}, nullptr,
                              [&](const std::string& what) { losses.push_back(what); });
  auto load = [](std::int64_t id) {
    return [id] {
      comb::storage::community_access state;
      state.community_id = id;
      state.exists = true;
      return std::optional{state};
    };
  };
  auto failing = registry.ensure(7, load(7));
  auto stopped = registry.ensure(8, load(8));
  REQUIRE(failing);
  REQUIRE(stopped);
  {
    // A deleted community is forgotten, and its actor ends once nothing holds it.
    auto deleted = registry.ensure(9, load(9));
    REQUIRE(deleted);
    t.scheduler->run();
    registry.forget(9);
  }
  t.scheduler->run();
  caf::anon_send_exit(stopped->actor, caf::exit_reason::user_shutdown);
  t.scheduler->run();
  CHECK(losses.empty());
  caf::anon_send_exit(failing->actor, caf::exit_reason::unhandled_exception);
  t.scheduler->run();
  REQUIRE(losses.size() == 1);
  CHECK(losses.front().find("the actor of community 7 ended") == 0);
}
