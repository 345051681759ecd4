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

/// Events per community a gap brings back from Postgres at most.
constexpr int gap_events_max = 1000;

/// The bridge asks for the fill again, later (actors/bridge/fill_backoff.hpp).
void unanswered(self_ptr self, std::int64_t lost_at_ms) {
  spdlog::warn("bridge gap: Postgres did not answer; the fill is asked again later");
  self->send(self->state.args.bridge, unfilled_atom_v, lost_at_ms);
}

/// What other pods published from `lost_at_ms` until now may never have reached this pod's
/// subscribers. Each served community's events stored since then go to the bridge, whatever
/// their created_at (a client may publish an old event); a minute earlier, for Postgres's clock
/// against the pod's and for transactions begun before the loss whose envelopes went down with
/// the link. Each goes with the community's state version read after the events, as an envelope
/// carries its origin's: a removal that came before an event is in it, so the bridge holds the
/// event until this pod applied the removal (a pod that lags behind the database would otherwise
/// hand a removed reader what a fill brings). Ephemeral events of the gap are gone.
void fill_gap(self_ptr self, std::int64_t lost_at_ms) {
  auto& st = self->state;
  const auto now = unix_now();
  const std::int64_t since = lost_at_ms / 1000 - 60;
  std::vector<std::pair<std::int64_t, std::vector<storage::recent_event>>> found;
  bool cut_short = false;
  for (auto id : st.args.registry->community_ids()) {
    auto rows = storage::load_recent_events(*st.connection, id, since, now, gap_events_max);
    if (!rows)
      return unanswered(self, lost_at_ms);
    cut_short = cut_short || rows->size() == static_cast<std::size_t>(gap_events_max);
    if (!rows->empty())
      found.emplace_back(id, std::move(*rows));
  }
  std::vector<std::int64_t> ids;
  for (const auto& [id, rows] : found)
    ids.push_back(id);
  using version_map = std::unordered_map<std::int64_t, std::int64_t>;
  auto versions = ids.empty() ? std::optional<version_map>(version_map{})
                              : storage::load_versions(*st.connection, ids);
  if (!versions)
    return unanswered(self, lost_at_ms);
  std::size_t delivered = 0;
  for (auto& [id, rows] : found) {
    auto version = versions->find(id);
    if (version == versions->end())
      continue; // deleted since
    for (auto& stored : rows) {
      auto live = live_from_stored(std::move(stored.raw));
      if (!live)
        continue;
      // The rooms it borrows decide who sees it, as they do for one the writer hands on.
      if (protocol::may_carry_borrowed_rooms(live->ev->kind) && !protocol::room_of(*live->ev))
        live->borrowed_rooms = std::make_shared<const std::vector<std::string>>(std::move(stored.borrowed_rooms));
      self->send(st.args.bridge, gap_atom_v, committed_event{id, std::move(*live)}, version->second,
                 lost_at_ms);
      ++delivered;
    }
  }
  spdlog::info("bridge gap: {} stored event(s) since {} handed to the fan-out{}", delivered, since,
               cut_short ? " (the newest 1000 per community: a REQ finds the rest)" : "");
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
