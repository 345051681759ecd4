// SPDX-License-Identifier: MIT
// The watch over the actors a pod cannot serve without, on CAF's deterministic scheduler.
#include <catch2/catch.hpp>

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
