// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <string>

#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "storage/bridge_gap.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

struct gap_filler_args {
  std::string database_url;
  std::shared_ptr<community_registry> registry;
  caf::actor bridge; ///< takes each event with its community's version, and holds it if need be
  std::shared_ptr<relay_metrics> metrics; ///< may be null
  /// What one fill reads at most: rows per community, bytes over all of them (the bridge's
  /// hold takes 64 MiB).
  storage::recent_bound budget{};
};

struct gap_filler_state {
  gap_filler_args args;
  std::unique_ptr<storage::pg_connection> connection;
  /// The earliest loss asked for and not yet filled; while it holds one, its fill is on its way
  /// (tick_atom): asks that come while a fill runs make one fill after it, not one each.
  std::optional<std::int64_t> pending_since;
  static inline const char* name = "gap-filler";
};

/// Reads what other pods sent that never came (run detached: libpq blocks). On (ready_atom,
/// lost_at_ms) from the bridge (a transport or link was lost and is back, or another pod's
/// envelope numbers skipped), each served community's events stored since a minute before
/// `lost_at_ms` go back to the bridge with the community's state version and `lost_at_ms`
/// (gap_atom), at most 1,000 per community and 64 MiB of JSON in all, one community at a time
/// (counted: comb_bridge_gap_fill_events_total, _bytes_total, comb_bridge_gap_fills_cut_total); the bridge holds what this pod may not show yet, as
/// it holds envelopes, and the fan-out drops what it delivered already. When Postgres does not
/// answer it tells the bridge (unfilled_atom, lost_at_ms), which asks again later. Asks that
/// arrive while a fill runs (Redis dropping and coming back faster than a fill reads every
/// community) are joined into one fill from the earliest of them. An actor
/// with a connection of its own: a fill reads every served community, and the access watcher
/// must not wait behind it to apply a revocation.
caf::behavior gap_filler(caf::stateful_actor<gap_filler_state>* self, gap_filler_args args);

} // namespace comb::actors
