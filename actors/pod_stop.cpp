// SPDX-License-Identifier: MIT
// How a pod stops. At a signal: no new socket, each connection closed with 1001 once answered
// everything it asked (connection_drain.hpp), then the writers' last commits, then their events
// to Redis, and only then the transports and the actors.
#include "actors/pod_actors.hpp"

#include <csignal>
#include <cstdlib>
#include <spdlog/spdlog.h>
#include <thread>

#include "actors/gateway/server.hpp"
#include "actors/messages.hpp"
#include "actors/vital_watch.hpp"

namespace comb::actors {

namespace {

/// Until no connection is open and no NIP-86 call waits for its answer, or `grace` passes.
void wait_for_sessions(const server& gateway, std::chrono::seconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  while ((gateway.open_connections() > 0 || gateway.management_calls_waiting() > 0)
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

} // namespace

std::size_t wait_for_ends(caf::scoped_actor& self, const std::vector<caf::actor>& actors,
                          std::chrono::milliseconds patience) {
  for (const auto& actor : actors)
    self->monitor(actor);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::size_t left = actors.size();
  for (bool late = false; left > 0 && !late;) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    self->receive([&](const caf::down_msg&) { --left; },
                  caf::after(std::max(remaining, std::chrono::milliseconds{0})) >> [&] { late = true; });
  }
  return left;
}

/// What the pod does when an actor it cannot serve without ends while it runs: it stops, once.
std::function<void(const std::string&)> vital_loss(const pod_actors& pod) {
  return [stopping = pod.stopping, lost = pod.lost_vital](const std::string& what) {
    if (stopping->load() || lost->exchange(true))
      return;
    spdlog::critical("{}; the pod stops so that it is restarted", what);
    std::raise(SIGTERM);
  };
}

/// A storage reader or writer, the fan-out, the membership writer, the access watcher (access
/// would stop following the database), the bridge or its gatekeeper (other pods' events would
/// stop arriving), the gap filler, the directory or the management actor that ends while the
/// pod runs (an uncaught exception) would leave what was sent to it unanswered while /readyz
/// says ready: the pod stops instead, exit code 1, for its supervisor to restart.
void watch_vital(caf::actor_system& system, pod_actors& pod) {
  vital_actors vital{{"the fan-out", pod.fanout},
                     {"the membership writer", pod.membership_writer},
                     {"the access watcher", pod.access_watcher},
                     {"the gap filler", pod.gap_filler},
                     {"the community directory", pod.directory},
                     {"the management actor", pod.management},
                     {"the bridge", pod.bridge->actor},
                     {"the cluster gatekeeper", pod.bridge->gate}};
  for (std::size_t i = 0; i < pod.readers.size(); ++i)
    vital.emplace_back("storage reader " + std::to_string(i), pod.readers[i]);
  for (std::size_t i = 0; i < pod.writers.size(); ++i)
    vital.emplace_back("storage writer " + std::to_string(i), pod.writers[i]);
  pod.vital_watch = watch_vital_actors(system, std::move(vital), vital_loss(pod));
}

void close_connections(server& gateway) {
  wait_for_sessions(gateway, drain_grace);
  if (auto open = gateway.open_connections())
    spdlog::warn("stopping: {} connections were still open {} s after the signal; closing them", open,
                 drain_grace.count());
  gateway.stop();
  wait_for_sessions(gateway, close_grace);
}

void finish_writes(caf::actor_system& system, pod_actors& pod) {
  if (pod.writes_finished.exchange(true))
    return;
  // From here on the actors' ends are expected: none of them is a reason to exit with 1.
  pod.stopping->store(true);
  caf::scoped_actor self{system};
  if (pod.vital_watch)
    self->send_exit(pod.vital_watch, caf::exit_reason::user_shutdown);
  for (const auto& writer : pod.writers)
    self->send(writer, shutdown_atom_v);
  if (auto unfinished = wait_for_ends(self, pod.writers, writers_finish_wait)) {
    pod.writers_abandoned = true;
    spdlog::error("stopping: {} storage writers were still committing {} s after they were told to "
                  "finish; the pod exits without them (their clients are gone; a transaction stuck in its "
                  "COMMIT may still commit, unpublished)",
                  unfinished, writers_finish_wait.count());
  }
  if (pod.bridge)
    pod.bridge->drain(self, bridge_drain_wait);
}

void stop_actors(caf::actor_system& system, pod_actors& pod) {
  finish_writes(system, pod);
  caf::scoped_actor self{system};
  if (pod.bridge)
    pod.bridge->stop(self);
  for (const auto& reader : pod.readers)
    self->send_exit(reader, caf::exit_reason::user_shutdown);
  self->send_exit(pod.fanout, caf::exit_reason::user_shutdown);
  self->send_exit(pod.directory, caf::exit_reason::user_shutdown);
  if (pod.access_watcher)
    self->send_exit(pod.access_watcher, caf::exit_reason::user_shutdown);
  if (pod.gap_filler)
    self->send_exit(pod.gap_filler, caf::exit_reason::user_shutdown);
  if (pod.management)
    self->send_exit(pod.management, caf::exit_reason::user_shutdown);
  self->send_exit(pod.membership_writer, caf::exit_reason::user_shutdown);
  if (pod.registry)
    for (const auto& community : pod.registry->actors())
      self->send_exit(community, caf::exit_reason::user_shutdown);
  if (pod.writers_abandoned) { // the actor system's end would wait for them forever
    spdlog::error("stopped without the storage writers");
    spdlog::default_logger()->flush();
    std::_Exit(1);
  }
}

} // namespace comb::actors
