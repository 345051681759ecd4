// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "actors/community/community_registry.hpp"
#include "actors/community/notice_inbox.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

struct access_watcher_args {
  std::string database_url;
  std::shared_ptr<community_registry> registry;
  caf::actor fanout;
  std::shared_ptr<relay_metrics> metrics;
  /// How often every served community's state version is compared with the database: the
  /// backup for a notification missed while the LISTEN connection was down.
  std::chrono::milliseconds check_interval{1000};
  /// Where the LISTEN connection leaves notifications (notice_atom wakes the watcher).
  std::shared_ptr<notice_inbox> notices = std::make_shared<notice_inbox>();
  /// A community's state is reloaded for a newer version at most once in this time; a change
  /// within it is taken at its end, with every other change made meanwhile. A member who joins
  /// and leaves rooms in a loop changes the version as fast as the writers go, and each change
  /// would have every pod read the whole community again.
  std::chrono::milliseconds min_reload_interval{100};
};

/// How far a pod's clock may be from the database's before the pod logs an error: other pods
/// refuse its envelopes past 60 s of skew between two pods (storage::envelope_max_skew_ms), and
/// every pod within 30 s of the one database keeps every pair within that. Not a readiness
/// condition: a database whose own clock drifted would take every pod out of rotation at once,
/// while pods that agree with each other deliver fine. Purges and list times follow the
/// database's clock; events' created_at windows and NIP-42 and NIP-98 times follow the pod's.
inline constexpr std::int64_t max_database_clock_offset_ms = 30'000;

/// The access watcher measures the offset every this many version checks.
inline constexpr unsigned clock_check_every = 10;

/// "" while the pod's clock is within max_database_clock_offset_ms of the database's (or not
/// measured yet); otherwise how far off it is (for the log).
[[nodiscard]] std::string clock_problem(const relay_metrics& metrics);

struct access_watcher_state {
  access_watcher_args args;
  std::unique_ptr<storage::pg_connection> connection;
  /// Per served community: the state version through which the events its changes wrote were
  /// given to the local fan-out (one entry per community the registry serves).
  std::unordered_map<std::int64_t, std::int64_t> delivered;
  /// Communities a reload of every community (the LISTEN connection came up: the database may
  /// be another, after a failover or a restore) has still to take again, whatever their
  /// version (a database gone back can repeat one with other content). Taken a turn at a time,
  /// so notifications and version checks go on between turns; a turn the database cuts short
  /// resumes at the next check, where it stopped.
  std::vector<std::int64_t> reload_left;
  bool reload_turn_queued = false;
  /// More communities moved than one version check takes: the next turn is queued.
  bool check_turn_queued = false;
  /// Per community, the version of a state reloaded and sent to its actor that the actor's
  /// cache had not reached at the last check: the next turns, which follow at once, do not
  /// reload it again while it is on its way.
  std::unordered_map<std::int64_t, std::int64_t> loads_on_their_way;
  /// Communities whose retaken state was read before a write of the pod's own: read again at
  /// the next check, after the version check (which rewinds a pod whose write a failover lost).
  std::unordered_set<std::int64_t> retakes_owed;
  /// When each community's state was last reloaded for a newer version (min_reload_interval).
  std::unordered_map<std::int64_t, std::chrono::steady_clock::time_point> last_reloads;
  /// Communities whose reload waits for min_reload_interval: the newest version heard of.
  std::unordered_map<std::int64_t, std::int64_t> reloads_deferred;
  unsigned ticks = 0;
  bool clock_off = false; ///< the last measure was past max_database_clock_offset_ms (logged once)
  static inline const char* name = "access-watcher";
};

/// Makes this pod enforce what the database says (run detached: libpq blocks). For each
/// notification (notice_atom) about a community this pod serves and has not applied yet, it
/// reloads that community's state (members, access, archived, version) and hands it to the
/// community actor. For every notification, and whenever it finds a community's version moved,
/// it loads by version every event the changes since the last version it delivered wrote
/// (lists, deltas, room state; `noted_events`, a page at a time) and gives them to the local
/// fan-out, which drops what the bridge or the local writer already brought. So changes of any
/// size, and changes whose notification was lost, reach local subscribers. On reload_atom (the
/// LISTEN connection came up) and on a periodic version check it reloads what is behind. On
/// (access_atom, community, version, ask) from the bridge (an event from a pod that held
/// `version` waits) it catches that community up at once, and answers (database_version_atom,
/// community, what the database holds, ask) when that is less.
caf::behavior access_watcher(caf::stateful_actor<access_watcher_state>* self,
                             access_watcher_args args);

} // namespace comb::actors
