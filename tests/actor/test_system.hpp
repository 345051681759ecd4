// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <memory>

namespace comb::test {

/// An actor system on CAF's deterministic scheduler: nothing runs until the test says so. The
/// base of every actor-tier fixture (a fixture's own members, spawned in its constructor, go
/// before the system does).
struct test_system {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  caf::scheduler::test_coordinator* scheduler = nullptr;

  test_system() {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    scheduler = &dynamic_cast<caf::scheduler::test_coordinator&>(system->scheduler());
  }
};

} // namespace comb::test
