// SPDX-License-Identifier: MIT
#include "actors/community/access_watcher.hpp"

#include "actors/clock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <spdlog/spdlog.h>

#include "actors/community/stored_events.hpp"
#include "storage/access_change.hpp"
#include "storage/access_state.hpp"
#include "storage/database_clock.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<access_watcher_state>*;

/// The next turn of a reload of every community, or of a version check, between which the
/// mailbox's notifications are served.
using reload_turn_atom = caf::atom_constant<caf::atom("reloadturn")>;
using check_turn_atom = caf::atom_constant<caf::atom("checkturn")>;
/// A reload min_reload_interval held back is due.
using deferred_atom = caf::atom_constant<caf::atom("deferred")>;
constexpr reload_turn_atom reload_turn_atom_v{};
constexpr check_turn_atom check_turn_atom_v{};
constexpr deferred_atom deferred_atom_v{};

/// Communities one turn reloads (about 8 round trips each): a pod serving thousands of them
/// still answers a notification within a turn, not after all of them.
constexpr std::size_t communities_per_turn = 32;

/// How a reloaded state is to be taken: when newer than what the pod holds; also at the version
/// it holds, unless the pod's own writes passed it (a LISTEN reconnect); whatever its version (a
/// database that went back).
enum class taking { newer, retake, rewind };

/// Cached host answers of the community go (community_directory), so the next connection or
/// NIP-11 request reads what the database holds now.
void forget_hosts(self_ptr self, std::int64_t community_id) {
  if (const auto& hooks = self->state.args.registry->hooks())
    hooks->forget_hosts(community_id);
}

/// Reloads one community and hands its state to its actor, to be taken as `how` says. The
/// version loaded (0 when the community is not served here or is gone); nothing on a database
/// error.
std::optional<std::int64_t> reload(self_ptr self, std::int64_t community_id, taking how = taking::newer) {
  auto& st = self->state;
  auto community = st.args.registry->find(community_id);
  if (!community)
    return std::int64_t{0};
  auto state = storage::load_access(*st.connection, community_id);
  if (!state)
    return std::nullopt;
  bump(st.args.metrics->access_reloads);
  auto version = state->version;
  st.loads_on_their_way[community_id] = version;
  bool deleted = !state->exists;
  // Taken again after notifications may have been lost, or gone: a host removed or moved, or
  // an info change, may be among what this pod did not hear of.
  if (how != taking::newer || deleted)
    forget_hosts(self, community_id);
  switch (how) {
    case taking::newer: self->send(community->actor, refresh_atom_v, std::move(*state)); break;
    case taking::retake: self->send(community->actor, retake_atom_v, std::move(*state)); break;
    case taking::rewind: self->send(community->actor, rewind_atom_v, std::move(*state)); break;
  }
  // Ids are never reused: once its actor has closed what was open, a deleted community is
  // dropped, not reloaded on every check.
  if (deleted)
    st.args.registry->forget(community_id);
  return version;
}

/// The version through which the events of `community_id`'s changes reached this pod's fan-out.
/// A community first seen starts at the state this pod holds: nothing older is news.
std::int64_t& delivered_through(self_ptr self, std::int64_t community_id, const member_cache& cache) {
  return self->state.delivered.try_emplace(community_id, cache.whole_version()).first->second;
}

/// One stored event to the local fan-out (through `via` when given); a row that does not parse
/// is skipped.
bool publish(self_ptr self, std::int64_t community_id, std::string raw, const caf::actor& via = {}) {
  auto& st = self->state;
  auto live = live_from_stored(std::move(raw));
  if (!live)
    return false;
  bump(st.args.metrics->access_events_delivered);
  self->send(via ? via : st.args.fanout, publish_atom_v, committed_event{community_id, std::move(*live)});
  return true;
}

/// Every event the changes after the delivered version and up to `through` wrote (this pod's
/// own included: the fan-out drops what the writer already gave it), a page at a time, so a
/// change of any size and the changes of lost notifications all reach local subscribers. They go
/// through the community actor, after the state reloaded for them: its cache (and the fan-out's
/// revocations) come first, so a reader the change removed does not get the change's own events
/// (a private room's new 39002). False on a database error (the next notification or check
/// tries again from the same place).
bool deliver(self_ptr self, std::int64_t community_id, const member_cache& cache,
             std::int64_t through, const caf::actor& community_actor) {
  auto& st = self->state;
  auto& delivered = delivered_through(self, community_id, cache);
  if (through <= delivered)
    return true;
  storage::noted_position after{delivered, std::numeric_limits<std::int64_t>::max()};
  for (;;) {
    auto page = storage::load_noted_events(*st.connection, community_id, after, through);
    if (!page)
      return false;
    for (auto& row : *page) {
      after = row.at;
      (void)publish(self, community_id, std::move(row.raw), community_actor);
    }
    if (page->size() < static_cast<std::size_t>(storage::noted_events_page))
      break;
  }
  delivered = through;
  return true;
}

/// Whether a reload of the community for `version` waits, min_reload_interval after the last
/// one: then the newest version heard of is kept, and taken when the time is up (deferred_atom).
/// Otherwise the reload about to happen is noted.
bool held_back(self_ptr self, std::int64_t community_id, std::int64_t version) {
  auto& st = self->state;
  const auto now = std::chrono::steady_clock::now();
  auto [last, first] = st.last_reloads.try_emplace(community_id, now);
  if (first || now - last->second >= st.args.min_reload_interval) {
    last->second = now;
    st.reloads_deferred.erase(community_id);
    return false;
  }
  auto [deferred, new_wait] = st.reloads_deferred.try_emplace(community_id, version);
  deferred->second = std::max(deferred->second, version);
  if (new_wait) {
    bump(st.args.metrics->access_reloads_deferred);
    self->delayed_send(self, std::chrono::duration_cast<std::chrono::milliseconds>(
                               last->second + st.args.min_reload_interval - now) + std::chrono::milliseconds(1),
                       deferred_atom_v, community_id);
  }
  return true;
}

/// Reloads the community when this pod does not hold `version` yet, then
/// delivers what the changes up to the version it holds or reloaded wrote: never further than
/// the database says, so a notification naming a version that does not exist (anyone connected
/// to the database may NOTIFY) cannot move the delivered version past real ones. False on a
/// database error.
bool catch_up(self_ptr self, std::int64_t community_id, std::int64_t version) {
  auto community = self->state.args.registry->find(community_id);
  if (!community)
    return true;
  const auto& cache = *community->members;
  (void)delivered_through(self, community_id, cache); // before the reload moves what it holds
  if (version > cache.whole_version()) {
    if (held_back(self, community_id, version))
      return true;
    auto loaded = reload(self, community_id);
    if (!loaded)
      return false;
    version = *loaded;
  }
  return deliver(self, community_id, cache, version, community->actor);
}

void on_notice(self_ptr self, const storage::access_notice& notice) {
  auto& st = self->state;
  auto community = st.args.registry->find(notice.community_id);
  if (!community)
    return; // not served here
  // A change that wrote no events is one of access, archive or hosts: cached host lookups go.
  if (!notice.wrote_events && notice.version > community->members->whole_version())
    forget_hosts(self, notice.community_id);
  (void)catch_up(self, notice.community_id, notice.version);
}

bool check_versions(self_ptr self);
void queue_check_turn(self_ptr self);

/// The bridge holds events whose origin claimed state version `claimed`, and every later event
/// of the community waits behind them: when the database, read now, holds less, the claim was
/// false (any holder of the cluster secret may send one) or the database went back, and the
/// bridge is told so, to drop them rather than hold the community up for their whole wait.
void answer_claim(self_ptr self, std::int64_t community_id, std::int64_t claimed, std::int64_t ask) {
  auto asker = caf::actor_cast<caf::actor>(self->current_sender());
  if (!asker)
    return;
  auto versions = storage::load_versions(*self->state.connection, {community_id});
  if (!versions)
    return; // a database error: the hold's wait decides
  auto it = versions->find(community_id);
  const std::int64_t held = it == versions->end() ? 0 : it->second; // gone: nothing holds
  if (held < claimed)
    self->send(asker, database_version_atom_v, community_id, held, ask);
}

/// What the LISTEN connection left in the inbox since the last wake-up, each community once.
void on_notices(self_ptr self) {
  auto& st = self->state;
  auto batch = st.args.notices->take();
  st.args.metrics->access_notifications.fetch_add(batch.received, std::memory_order_relaxed);
  for (const auto& notice : batch.notices)
    on_notice(self, notice);
  if (batch.overflowed && check_versions(self))
    queue_check_turn(self);
}

/// The database holds an older state version of the community than this pod took from it:
/// versions only grow, so the database itself went back (restored from a backup, or a standby
/// that had not received the last changes promoted). Its state is taken again whatever its
/// version, and the changes' events are delivered from there on, so access follows the
/// database again at once rather than once its versions pass the old ones. False on a database
/// error.
bool rewind(self_ptr self, std::int64_t community_id, std::int64_t database_version,
            std::int64_t held_version) {
  auto& st = self->state;
  spdlog::warn("community {}: the database holds state version {}, older than the {} this pod "
               "took from it (restored or failed over?): taking its state again",
               community_id, database_version, held_version);
  bump(st.args.metrics->access_rewinds);
  auto loaded = reload(self, community_id, taking::rewind);
  if (!loaded)
    return false;
  st.delivered[community_id] = *loaded;
  return true;
}

/// Communities this pod no longer serves leave the delivered versions; new ones start there.
void follow_registry(self_ptr self, const std::vector<std::int64_t>& ids) {
  auto& st = self->state;
  const std::unordered_set<std::int64_t> served(ids.begin(), ids.end());
  std::erase_if(st.delivered, [&](const auto& entry) { return !served.contains(entry.first); });
  std::erase_if(st.loads_on_their_way, [&](const auto& entry) { return !served.contains(entry.first); });
  std::erase_if(st.last_reloads, [&](const auto& entry) { return !served.contains(entry.first); });
  for (auto id : ids)
    if (auto community = st.args.registry->find(id))
      (void)delivered_through(self, id, *community->members);
}

/// Takes the community's state again (taking::retake), then delivers what changes past the
/// delivered version wrote; a state no newer than that is where delivery goes on from (after a
/// failover that put other content at the delivered version, its events are not delivered
/// live: subscribers read them from the store). False on a database error.
bool take_again(self_ptr self, std::int64_t community_id) {
  auto community = self->state.args.registry->find(community_id);
  if (!community)
    return true;
  auto& delivered = delivered_through(self, community_id, *community->members);
  auto loaded = reload(self, community_id, taking::retake);
  if (!loaded)
    return false;
  if (*loaded <= delivered) {
    delivered = *loaded;
    return true;
  }
  return deliver(self, community_id, *community->members, *loaded, community->actor);
}

void queue_reload_turn(self_ptr self) {
  if (!std::exchange(self->state.reload_turn_queued, true))
    self->send(self, reload_turn_atom_v);
}

void queue_check_turn(self_ptr self) {
  if (!std::exchange(self->state.check_turn_queued, true))
    self->send(self, check_turn_atom_v);
}

/// The LISTEN connection came (back) up: notifications may have been lost meanwhile, and a
/// failover's new primary may hold the very version this pod holds with other content, which
/// no comparison of versions sees: every community's state is taken again at that version too.
void reload_all(self_ptr self) {
  self->state.reload_left = self->state.args.registry->community_ids();
  queue_reload_turn(self);
}

/// One turn of reload_all; the database away leaves the rest for the next check.
void reload_turn(self_ptr self) {
  auto& left = self->state.reload_left;
  std::size_t taken = 0;
  for (; taken < left.size() && taken < communities_per_turn; ++taken)
    if (!take_again(self, left[taken]))
      break;
  left.erase(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(taken));
  if (!left.empty() && taken == communities_per_turn)
    queue_reload_turn(self);
}

/// The retakes the community actors asked for again (retakes_owed); any the database cut short
/// stay owed.
void retake_owed(self_ptr self) {
  auto& owed = self->state.retakes_owed;
  for (auto it = owed.begin(); it != owed.end();)
    it = take_again(self, *it) ? owed.erase(it) : std::next(it);
}

/// The backup: communities whose version moved (or that are gone) without a notification,
/// communities_per_turn of them at most; true when more moved (the next turn finds them again,
/// having taken these).
bool check_versions(self_ptr self) {
  auto& st = self->state;
  auto ids = st.args.registry->community_ids();
  follow_registry(self, ids);
  if (ids.empty())
    return false;
  // What the pod holds, taken before the database is read: the pod's own writes move it on
  // meanwhile, and a version read before them is no sign of the database going back.
  std::vector<std::int64_t> held;
  std::vector<std::int64_t> held_whole;
  held.reserve(ids.size());
  held_whole.reserve(ids.size());
  for (auto id : ids) {
    auto community = st.args.registry->find(id);
    held.push_back(community ? community->members->version() : 0);
    held_whole.push_back(community ? community->members->whole_version() : 0);
  }
  auto versions = storage::load_versions(*st.connection, ids);
  if (!versions)
    return false;
  std::size_t taken = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto id = ids[i];
    auto it = versions->find(id);
    if (auto sent = st.loads_on_their_way.find(id); sent != st.loads_on_their_way.end()) {
      if (held[i] >= sent->second)
        st.loads_on_their_way.erase(sent); // applied (or passed)
      else if (it != versions->end() && it->second == sent->second)
        continue; // the state of this version is in its actor's mailbox
    }
    if (st.reloads_deferred.contains(id))
      continue; // taken when its interval ends
    const bool moved = it == versions->end() || it->second != held[i];
    if (moved && taken++ == communities_per_turn)
      return true;
    if (it == versions->end()) {
      if (!reload(self, id)) // gone
        return false;
    } else if (it->second < held[i]) {
      if (!rewind(self, id, it->second, held[i]))
        return false;
    } else {
      // A change this pod has no notification of (yet): what kind it was is unknown here.
      if (it->second > held_whole[i])
        forget_hosts(self, id);
      if (!catch_up(self, id, it->second))
        return false;
    }
  }
  return false;
}

/// The database's clock against the pod's, every clock_check_every checks: a pod whose clock
/// drifted or jumped says so (a gauge, and a log line when it crosses the bound).
void measure_clock(self_ptr self) {
  auto& st = self->state;
  if (st.ticks++ % clock_check_every != 0)
    return;
  auto offset = storage::database_clock_offset_ms(*st.connection);
  if (!offset)
    return;
  st.args.metrics->database_clock_offset_ms.store(*offset, std::memory_order_relaxed);
  st.args.metrics->database_clock_known.store(true, std::memory_order_relaxed);
  const bool off = std::abs(*offset) > max_database_clock_offset_ms;
  if (off && !st.clock_off)
    spdlog::error("{}: other pods refuse its events past 60 s of skew between two pods (keep"
                  " every clock in sync with NTP, the database's too)", clock_problem(*st.args.metrics));
  else if (!off && st.clock_off)
    spdlog::info("this pod's clock is within {} ms of the database's again", std::abs(*offset));
  st.clock_off = off;
}

} // namespace

std::string clock_problem(const relay_metrics& metrics) {
  const auto measured = metrics.database_clock_ahead_ms();
  if (!measured || std::abs(*measured) <= max_database_clock_offset_ms)
    return {};
  const auto offset = *measured;
  return "this pod's clock is " + std::to_string(std::abs(offset) / 1000) + " s "
         + (offset > 0 ? "behind" : "ahead of") + " the database's";
}

caf::behavior access_watcher(caf::stateful_actor<access_watcher_state>* self,
                             access_watcher_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.connection = std::make_unique<storage::pg_connection>(
    st.args.database_url, storage::pg_reconnect_policy{1, std::chrono::milliseconds(50)});
  follow_registry(self, st.args.registry->community_ids());
  self->delayed_send(self, st.args.check_interval, tick_atom_v);
  return {
    [=](notice_atom) { on_notices(self); },
    [=](reload_atom) { reload_all(self); },
    [=](reload_turn_atom) {
      self->state.reload_turn_queued = false;
      reload_turn(self);
    },
    [=](check_turn_atom) {
      self->state.check_turn_queued = false;
      if (check_versions(self))
        queue_check_turn(self);
    },
    // A retaken state was read before a write of the pod's own: read it again at the next
    // check, not at once (a write a failover lost keeps the pod ahead until the check rewinds).
    [=](retake_atom, std::int64_t community_id) { self->state.retakes_owed.insert(community_id); },
    // The bridge holds an event whose origin had `version`: read the database now, not at the
    // notification (which may lag) or the next check.
    [=](access_atom, std::int64_t community_id, std::int64_t version, std::int64_t ask) {
      (void)catch_up(self, community_id, version);
      answer_claim(self, community_id, version, ask);
    },
    // A held-back reload is due; a database error leaves it to the next version check.
    [=](deferred_atom, std::int64_t community_id) {
      auto deferred = self->state.reloads_deferred.find(community_id);
      if (deferred == self->state.reloads_deferred.end())
        return; // taken meanwhile
      const auto version = deferred->second;
      self->state.reloads_deferred.erase(deferred);
      (void)catch_up(self, community_id, version);
    },
    [=](tick_atom) {
      // Versions are compared during a reload too: what moved is taken at once, and a reload
      // the database cut short resumes where it stopped.
      if (check_versions(self))
        queue_check_turn(self);
      if (!self->state.reload_left.empty())
        queue_reload_turn(self);
      retake_owed(self);
      measure_clock(self);
      self->delayed_send(self, self->state.args.check_interval, tick_atom_v);
    },
  };
}

} // namespace comb::actors
