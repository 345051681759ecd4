// SPDX-License-Identifier: MIT
#pragma once
// The actors of one pod, and how the pod stops: at a signal (drained, in order) or when an actor
// it cannot serve without ends.

#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/bridge/bridge_setup.hpp"
#include "actors/community/community_registry.hpp"
#include "actors/community/notice_inbox.hpp"
#include "actors/gateway/community_directory.hpp"
#include "actors/storage/reader_waits.hpp"
#include "storage/event_body_cache.hpp"

namespace comb::actors {

class server;

/// Every long-lived actor of a pod, and what they share.
struct pod_actors {
  std::vector<caf::actor> readers;
  std::shared_ptr<reader_waits> readers_waiting;
  caf::actor fanout;
  std::vector<caf::actor> writers;
  caf::actor membership_writer;
  caf::actor directory;
  caf::actor access_watcher;
  /// Notifications from the LISTEN connection to the access watcher.
  std::shared_ptr<notice_inbox> notices = std::make_shared<notice_inbox>();
  caf::actor gap_filler;
  caf::actor management;
  std::shared_ptr<community_registry> registry;
  std::optional<pod_bridge> bridge;
  /// Stored events' JSON shared by the readers and writers; null when turned off.
  std::shared_ptr<storage::event_body_cache> bodies;
  /// Set once the server exists; the directory calls it for archived or deleted communities.
  std::shared_ptr<community_closer> close_community = std::make_shared<community_closer>();
  /// Set before the pod stops its actors: from then on their ends are expected.
  std::shared_ptr<std::atomic<bool>> stopping = std::make_shared<std::atomic<bool>>(false);
  /// Set when an actor the pod cannot serve without ended on its own (watch_vital_actors).
  std::shared_ptr<std::atomic<bool>> lost_vital = std::make_shared<std::atomic<bool>>(false);
  caf::actor vital_watch;
  /// finish_writes ran (at a signal, before the io_context stopped).
  std::atomic<bool> writes_finished{false};
  /// A writer had not finished within writers_finish_wait: the process cannot wait for the
  /// actor system to end, so it exits at once after the rest has stopped.
  std::atomic<bool> writers_abandoned{false};
};

/// How long connections have, once the pod is signalled, to be answered what they asked.
inline constexpr std::chrono::seconds drain_grace{5};
/// Then how long those still open have to take what is queued for them and the close.
inline constexpr std::chrono::seconds close_grace{1};
/// Then how long the writers have to commit and answer what they hold: a batch waiting out its
/// 10 s lock_timeout once fits; a statement stuck on a stalled disk, or a batch whose retry per
/// community waits out the lock again, does not. Every phase together stays under Kubernetes'
/// default 30 s grace before SIGKILL.
inline constexpr std::chrono::seconds writers_finish_wait{15};
/// Then how long the writers' last events have to reach Redis.
inline constexpr std::chrono::milliseconds bridge_drain_wait{2000};

/// What the pod does when an actor it cannot serve without ends while it runs: it stops, once.
[[nodiscard]] std::function<void(const std::string&)> vital_loss(const pod_actors& pod);

/// Stops the pod (exit code 1) when an actor it cannot serve without ends while it runs.
void watch_vital(caf::actor_system& system, pod_actors& pod);

/// Waits until every one of `actors` has ended or `patience` passes; returns how many had not.
[[nodiscard]] std::size_t wait_for_ends(caf::scoped_actor& self, const std::vector<caf::actor>& actors,
                                        std::chrono::milliseconds patience);

/// After gateway.drain(): waits up to drain_grace for every connection to be answered and
/// close, then closes the rest (1001) and waits up to close_grace for them.
void close_connections(server& gateway);

/// Once no connection is left: the writers commit and answer what they hold, and what they
/// published reaches Redis (bridge_drain_wait). The io_context must still run. Once per pod.
void finish_writes(caf::actor_system& system, pod_actors& pod);

/// The last step: finish_writes if not done, then every actor is told to exit. When a writer
/// was abandoned, the process exits here with code 1.
void stop_actors(caf::actor_system& system, pod_actors& pod);

} // namespace comb::actors
