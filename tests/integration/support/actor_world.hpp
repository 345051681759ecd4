// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <vector>

#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"

namespace comb::test {

/// A real CAF system for the actors that talk to Postgres (run detached, as in a pod), with a
/// registry whose community actors need no writer or fan-out. Every actor it knows of is told
/// to exit when it ends, however the test ends: the system waits for them.
struct actor_world {
  actor_world() {
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    idle = system->spawn([]() -> caf::behavior { return {[](actors::tick_atom) {}}; });
    registry = std::make_shared<actors::community_registry>(*system, idle, idle, metrics);
  }
  ~actor_world() {
    for (const auto& actor : registry->actors())
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    for (const auto& actor : spawned)
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(idle, caf::exit_reason::user_shutdown);
  }
  actor_world(const actor_world&) = delete;
  actor_world& operator=(const actor_world&) = delete;

  /// Spawns `f(args)` detached and remembers it, to be told to exit at the end.
  template <class F, class Args>
  caf::actor spawn_detached(F f, Args args) {
    auto actor = system->spawn<caf::detached>(f, std::move(args));
    spawned.push_back(actor);
    return actor;
  }

  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  std::shared_ptr<actors::relay_metrics> metrics = std::make_shared<actors::relay_metrics>();
  caf::actor idle; ///< the registry's membership writer and fan-out: takes nothing asked of it
  std::shared_ptr<actors::community_registry> registry;
  std::vector<caf::actor> spawned;
};

} // namespace comb::test
