// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

struct access_watcher_args {
  std::string database_url;
  std::shared_ptr<community_registry> registry;
  caf::actor fanout;
  protocol::bytes32 relay_pubkey{};
  std::shared_ptr<relay_metrics> metrics;
  /// How often every served community's state version is compared with the database: the
  /// backup for a notification missed while the LISTEN connection was down.
  std::chrono::milliseconds check_interval{1000};
};

struct access_watcher_state {
  access_watcher_args args;
  std::unique_ptr<storage::pg_connection> connection;
  static inline const char* name = "access-watcher";
};

/// Makes this pod enforce what the database says (run detached: libpq blocks). For each
/// notification (notice_atom) about a community this pod serves and has not applied yet, it
/// reloads that community's state (members, access, archived, version) and hands it to the
/// community actor, then loads the events the change wrote (list, deltas) and gives them to the
/// local fan-out, which drops what the bridge already brought. On reload_atom (the LISTEN
/// connection came up) and on a periodic version check it reloads what is behind.
caf::behavior access_watcher(caf::stateful_actor<access_watcher_state>* self,
                             access_watcher_args args);

} // namespace comb::actors
