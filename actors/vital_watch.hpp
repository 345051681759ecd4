// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace comb::actors {

/// The actors a pod cannot serve without (storage readers and writers, the fan-out, ...), by name.
using vital_actors = std::vector<std::pair<std::string, caf::actor>>;

/// Whether an actor's exit `reason` is a failure (an uncaught exception, a kill): not a quit,
/// nor the pod's shutdown (user_shutdown), nor an end because nothing held it (unreachable:
/// a deleted community's actor once its last connection closed).
[[nodiscard]] bool ended_by_failure(const caf::error& reason);

/// Monitors `actors`. One that ends before the watch itself is told to exit (by an uncaught
/// exception, or any other way) leaves the pod unable to answer what it owed: `on_loss` gets
/// its name and why, once, so the pod can stop and be restarted rather than hang unseen.
caf::actor watch_vital_actors(caf::actor_system& system, vital_actors actors,
                              std::function<void(const std::string&)> on_loss);

} // namespace comb::actors
