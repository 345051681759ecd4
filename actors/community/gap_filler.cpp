// SPDX-License-Identifier: MIT
#include "actors/community/gap_filler.hpp"

#include <algorithm>
#include <spdlog/spdlog.h>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actors/clock.hpp"
#include "actors/community/stored_events.hpp"
#include "protocol/room.hpp"
#include "storage/access_state.hpp"
#include "storage/bridge_gap.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<gap_filler_state>*;

/// The bridge asks for the fill again, later (actors/bridge/fill_backoff.hpp).
void unanswered(self_ptr self, std::int64_t lost_at_ms) {
  spdlog::warn("bridge gap: Postgres did not answer; the fill is asked again later");
  self->send(self->state.args.bridge, unfilled_atom_v, lost_at_ms);
}

/// What one fill brought.
struct fill_tally {
  std::size_t handed = 0;
  std::int64_t bytes = 0;
  bool cut_short = false;
};

void count_fill(relay_metrics* metrics, const fill_tally& tally) {
  if (!metrics)
    return;
  metrics->bridge_gap_fill_events.fetch_add(tally.handed, std::memory_order_relaxed);
  metrics->bridge_gap_fill_bytes.fetch_add(static_cast<std::uint64_t>(tally.bytes), std::memory_order_relaxed);
  if (tally.cut_short)
    metrics->bridge_gap_fills_cut.fetch_add(1, std::memory_order_relaxed);
}

/// Hands one community's rows to the bridge, with the version read after them; their count.
std::size_t hand_on(self_ptr self, std::int64_t id, std::vector<storage::recent_event>& rows,
                    std::int64_t version, std::int64_t lost_at_ms) {
  std::size_t handed = 0;
  for (auto& stored : rows) {
    auto live = live_from_stored(std::move(stored.raw));
    if (!live)
      continue;
    // The rooms it borrows decide who sees it, as they do for one the writer hands on.
    if (protocol::may_carry_borrowed_rooms(live->ev->kind) && !protocol::room_of(*live->ev))
      live->borrowed_rooms = std::make_shared<const std::vector<std::string>>(std::move(stored.borrowed_rooms));
    self->send(self->state.args.bridge, gap_atom_v, committed_event{id, std::move(*live)}, version,
               lost_at_ms);
    ++handed;
  }
  return handed;
}

/// What other pods published from `lost_at_ms` until now may never have reached this pod's
/// subscribers. Each served community's events stored since then go to the bridge, whatever
/// their created_at (a client may publish an old event); a minute earlier, for Postgres's clock
/// against the pod's and for transactions begun before the loss whose envelopes went down with
/// the link. Each goes with the community's state version read after its events, as an envelope
/// carries its origin's: a removal that came before an event is in it, so the bridge holds the
/// event until this pod applied the removal (a pod that lags behind the database would otherwise
/// hand a removed reader what a fill brings). Ephemeral events of the gap are gone. One
/// community is read and handed on at a time, and a fill holds at most `args.budget` of JSON
/// over all of them (the bridge's hold is no bigger): anyone may post large events in an open
/// community, and fills are routine (each Redis reconnect, each pod that goes).
void fill_gap(self_ptr self, std::int64_t lost_at_ms) {
  auto& st = self->state;
  const auto now = unix_now();
  // The loss is timed by this pod's clock, `stored_at` by the database's, and a pod does not
  // stop for a database whose clock drifted: the offset the access watcher measured moves it.
  const auto& metrics = st.args.metrics;
  const std::int64_t database_ahead = metrics ? metrics->database_clock_ahead_ms().value_or(0) : 0;
  const std::int64_t since = (lost_at_ms + database_ahead) / 1000 - 60;
  const auto& budget = st.args.budget;
  fill_tally tally;
  for (auto id : st.args.registry->community_ids()) {
    const std::int64_t bytes_left = budget.bytes - tally.bytes;
    if (bytes_left <= 0) {
      tally.cut_short = true;
      break;
    }
    auto rows = storage::load_recent_events(*st.connection, id, since, now, {budget.rows, bytes_left});
    if (!rows) {
      count_fill(st.args.metrics.get(), tally); // what went to the bridge before it
      return unanswered(self, lost_at_ms);
    }
    tally.cut_short = tally.cut_short || rows->cut;
    tally.bytes += rows->bytes;
    if (rows->events.empty())
      continue;
    auto versions = storage::load_versions(*st.connection, {id});
    if (!versions) {
      count_fill(st.args.metrics.get(), tally);
      return unanswered(self, lost_at_ms);
    }
    auto version = versions->find(id);
    if (version == versions->end())
      continue; // deleted since
    tally.handed += hand_on(self, id, rows->events, version->second, lost_at_ms);
  }
  count_fill(st.args.metrics.get(), tally);
  spdlog::info("bridge gap: {} stored event(s) since {} handed to the fan-out, {} bytes{}", tally.handed,
               since, tally.bytes, tally.cut_short ? " (cut at its bound: a REQ finds the rest)" : "");
}

} // namespace

caf::behavior gap_filler(caf::stateful_actor<gap_filler_state>* self, gap_filler_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.connection = std::make_unique<storage::pg_connection>(
    st.args.database_url, storage::pg_reconnect_policy{1, std::chrono::milliseconds(50)});
  return {
    [=](ready_atom, std::int64_t lost_at_ms) {
      auto& pending = self->state.pending_since;
      if (!pending)
        self->send(self, tick_atom_v);
      pending = std::min(pending.value_or(lost_at_ms), lost_at_ms);
    },
    [=](tick_atom) {
      if (auto since = std::exchange(self->state.pending_since, std::nullopt))
        fill_gap(self, *since);
    },
  };
}

} // namespace comb::actors
