// SPDX-License-Identifier: MIT
// The watch over the actors a pod cannot serve without, on CAF's deterministic scheduler.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>

#include "actors/vital_watch.hpp"

using namespace comb::actors;

namespace {

struct watched {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  caf::scheduler::test_coordinator* sched = nullptr;
  std::vector<std::string> losses;
  caf::actor reader, writer, watch;

  watched() {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(system->scheduler());
    auto idle = [](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; };
    reader = system->spawn(idle);
    writer = system->spawn(idle);
    watch = watch_vital_actors(*system, {{"storage reader 0", reader}, {"storage writer 0", writer}},
                               [this](const std::string& what) { losses.push_back(what); });
    sched->run();
  }
  ~watched() {
    for (auto* a : {&reader, &writer, &watch})
      caf::anon_send_exit(*a, caf::exit_reason::user_shutdown);
    sched->run();
  }
};

} // namespace

TEST_CASE("a vital actor that ends while the pod runs is reported once, by name", "[actor][vital]") {
  watched w;
  caf::anon_send_exit(w.reader, caf::exit_reason::unhandled_exception);
  w.sched->run();
  REQUIRE(w.losses.size() == 1);
  CHECK(w.losses.front().find("storage reader 0 ended") == 0);
  caf::anon_send_exit(w.writer, caf::exit_reason::unhandled_exception);
  w.sched->run();
  CHECK(w.losses.size() == 1); // the pod is stopping already
}

TEST_CASE("once the watch is told to exit, the pod's own shutdown is not a loss", "[actor][vital]") {
  watched w;
  caf::anon_send_exit(w.watch, caf::exit_reason::user_shutdown);
  w.sched->run();
  caf::anon_send_exit(w.reader, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(w.writer, caf::exit_reason::user_shutdown);
  w.sched->run();
  CHECK(w.losses.empty());
}
