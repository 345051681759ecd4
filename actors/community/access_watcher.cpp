// SPDX-License-Identifier: MIT
#include "actors/community/access_watcher.hpp"

#include <boost/json.hpp>

#include "protocol/event_json.hpp"
#include "storage/access_change.hpp"
#include "storage/access_state.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<access_watcher_state>*;

/// Relay-written lists of large communities are large; they come from our own database.
protocol::protocol_limits stored_event_limits() {
  protocol::protocol_limits limits;
  limits.max_tags_per_event = 10'000'000;
  limits.max_content_bytes = 1 << 30;
  return limits;
}

/// The version up to which this pod holds the community's whole state: members and rooms may
/// have been taken from different writes.
std::int64_t held_version(const member_cache& cache) {
  return std::min(cache.version(), cache.rooms_version());
}

/// Reloads one community and hands its state to its actor. False on a database error.
bool reload(self_ptr self, std::int64_t community_id) {
  auto& st = self->state;
  auto community = st.args.registry->find(community_id);
  if (!community)
    return true;
  auto state = storage::load_access(*st.connection, community_id);
  if (!state)
    return false;
  bump(st.args.metrics->access_reloads);
  self->send(community->actor, refresh_atom_v, std::move(*state));
  return true;
}

/// The events a change wrote, to local subscribers (the fan-out drops what it already saw).
void deliver(self_ptr self, const storage::access_notice& notice) {
  auto& st = self->state;
  if (notice.ids.empty() && !notice.more_ids)
    return;
  auto rows = notice.more_ids
                ? storage::load_newest_list_second(*st.connection, notice.community_id,
                                                   st.args.relay_pubkey)
                : storage::load_written_events(*st.connection, notice.community_id, notice.ids);
  if (!rows)
    return;
  for (auto& raw : *rows) {
    boost::system::error_code ec;
    auto json = boost::json::parse(raw, ec);
    if (ec)
      continue;
    auto ev = protocol::event_from_json(json, stored_event_limits());
    if (!ev)
      continue;
    live_event live{std::make_shared<const protocol::event>(std::move(ev).value()),
                    std::make_shared<const std::string>(std::move(raw))};
    self->send(st.args.fanout, publish_atom_v, committed_event{notice.community_id, live});
  }
}

void on_notice(self_ptr self, const std::string& payload) {
  auto& st = self->state;
  bump(st.args.metrics->access_notifications);
  auto notice = storage::parse_access_notice(payload);
  if (!notice)
    return;
  auto community = st.args.registry->find(notice->community_id);
  // Not served here, or this pod already holds that state (its own commit).
  if (!community || notice->version <= held_version(*community->members))
    return;
  // A change that wrote no events is one of access, archive or hosts: cached host lookups go.
  if (notice->ids.empty() && !notice->more_ids)
    if (const auto& hooks = st.args.registry->hooks())
      hooks->forget_hosts();
  if (reload(self, notice->community_id))
    deliver(self, *notice);
}

void reload_all(self_ptr self) {
  for (auto id : self->state.args.registry->community_ids())
    if (!reload(self, id))
      return; // the database is away: the next check tries again
}

/// The backup: communities whose version moved (or that are gone) without a notification.
void check_versions(self_ptr self) {
  auto& st = self->state;
  auto ids = st.args.registry->community_ids();
  if (ids.empty())
    return;
  auto versions = storage::load_versions(*st.connection, ids);
  if (!versions)
    return;
  for (auto id : ids) {
    auto community = st.args.registry->find(id);
    auto it = versions->find(id);
    bool behind = it == versions->end() || (community && it->second > held_version(*community->members));
    if (behind && !reload(self, id))
      return;
  }
}

} // namespace

caf::behavior access_watcher(caf::stateful_actor<access_watcher_state>* self,
                             access_watcher_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.connection = std::make_unique<storage::pg_connection>(
    st.args.database_url, storage::pg_reconnect_policy{1, std::chrono::milliseconds(50)});
  self->delayed_send(self, st.args.check_interval, tick_atom_v);
  return {
    [=](notice_atom, const std::string& payload) { on_notice(self, payload); },
    [=](reload_atom) { reload_all(self); },
    [=](tick_atom) {
      check_versions(self);
      self->delayed_send(self, self->state.args.check_interval, tick_atom_v);
    },
  };
}

} // namespace comb::actors
