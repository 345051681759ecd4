// SPDX-License-Identifier: MIT
// The bounded wait a stopping pod gives its storage writers. On CAF's threaded scheduler: the
// wait is in real time, as at a signal.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <chrono>

#include "actors/messages.hpp"
#include "actors/pod_actors.hpp"

using namespace comb::actors;
using namespace std::chrono_literals;

TEST_CASE("a stopping pod waits for its writers only until its patience ends", "[actor][stop]") {
  caf::actor_system_config config;
  config.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{config};
  auto finishes = system.spawn([](caf::event_based_actor* self) -> caf::behavior {
    return {[=](shutdown_atom) { self->quit(); }};
  });
  auto stuck = system.spawn([](caf::event_based_actor*) -> caf::behavior { // a commit that never returns
    return {[](shutdown_atom) {}};
  });
  caf::scoped_actor self{system};
  self->send(finishes, shutdown_atom_v);
  self->send(stuck, shutdown_atom_v);
  const auto start = std::chrono::steady_clock::now();
  CHECK(wait_for_ends(self, {finishes, stuck}, 300ms) == 1);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= 250ms); // CAF's timeout clock may end a hair early
  CHECK(waited < 5s);
  self->send_exit(stuck, caf::exit_reason::user_shutdown);
  CHECK(wait_for_ends(self, {stuck}, 5s) == 0);
}

TEST_CASE("writers that finish end the wait at once", "[actor][stop]") {
  caf::actor_system_config config;
  config.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{config};
  std::vector<caf::actor> writers;
  for (int i = 0; i < 3; ++i)
    writers.push_back(system.spawn([](caf::event_based_actor* self) -> caf::behavior {
      return {[=](shutdown_atom) { self->quit(); }};
    }));
  caf::scoped_actor self{system};
  for (const auto& writer : writers)
    self->send(writer, shutdown_atom_v);
  const auto start = std::chrono::steady_clock::now();
  CHECK(wait_for_ends(self, writers, 30s) == 0);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}
