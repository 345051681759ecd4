// SPDX-License-Identifier: MIT
#include "actors/community/community_actor.hpp"

#include <algorithm>
#include <set>

#include "actors/clock.hpp"

#include <spdlog/spdlog.h>

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<community_state>*;

/// The next batch goes to the writer, unless one is under way or the queue waits for the clock.
/// A command that may take access ends that wait, and every batch reaches the last such command
/// queued whatever the batch bound (the queue's bound bounds it): the writer writes a removal or
/// a ban at most one second ahead of a list however far ahead it is
/// (`membership_store::apply_locked`), so neither it nor what was queued before it waits behind
/// batch after batch of joins each waiting for its own second, and their order is kept.
void dispatch(self_ptr self) {
  auto& st = self->state;
  if (st.waiting_for_clock && st.access_change_queued)
    st.waiting_for_clock = false; // its wake, when it comes, is stale (clock_wait)
  if (!st.in_flight.empty() || st.queue.empty() || st.waiting_for_clock)
    return;
  st.access_change_queued = false;
  st.in_flight = st.queue.take(std::max(st.args.batch_max, st.queue.reach_of_access_changes()));
  std::vector<storage::membership_command> commands;
  commands.reserve(st.in_flight.size());
  for (const auto& waiting : st.in_flight)
    commands.push_back(waiting.command);
  st.batch_started = std::chrono::steady_clock::now();
  self->send(st.args.membership_writer, apply_atom_v, st.args.community_id, std::move(commands));
}

void count(self_ptr self, const storage::membership_write& write) {
  auto& st = self->state;
  if (!st.args.metrics)
    return;
  auto& m = *st.args.metrics;
  m.membership_latency.observe(
    std::chrono::duration<double>(std::chrono::steady_clock::now() - st.batch_started).count());
  for (std::size_t i = 0; i < st.in_flight.size() && i < write.results.size(); ++i) {
    auto path = static_cast<std::size_t>(st.in_flight[i].command.change);
    auto outcome = static_cast<std::size_t>(write.results[i].outcome);
    if (path < membership_paths && outcome < membership_outcomes)
      bump(m.membership_writes[path][outcome]);
  }
  if (write.list)
    bump(m.list_writes);
  if (write.clock_behind_seconds > 0) {
    bump(m.lists_ahead_of_clock);
    if (std::chrono::steady_clock::now() - st.clock_warned < std::chrono::minutes(1))
      return;
    st.clock_warned = std::chrono::steady_clock::now();
    spdlog::warn("community {}: its member list was {} s ahead of this pod's clock; written after it without "
                 "waiting (check the clocks of the pods and of where comb-admin runs)",
                 st.args.community_id, write.clock_behind_seconds);
  }
}

/// A write's event goes live: to the local fan-out when this pod's cache holds the write
/// (`cache_holds_it`), and to the other pods, which deliver it once they hold `stored_version`.
void publish(self_ptr self, const protocol::event& ev, std::string json, std::int64_t stored_version = 0,
             bool cache_holds_it = true) {
  auto& st = self->state;
  committed_event committed{st.args.community_id,
                            {std::make_shared<const protocol::event>(ev),
                             std::make_shared<const std::string>(std::move(json))},
                            stored_version};
  if (cache_holds_it)
    self->send(st.args.fanout, publish_atom_v, committed);
  if (st.args.bridge)
    self->send(st.args.bridge, publish_atom_v, committed);
}

void revoke(self_ptr self, std::vector<protocol::bytes32> lost) {
  if (!lost.empty())
    self->send(self->state.args.fanout, revoke_atom_v, self->state.args.community_id,
               pubkey_list(std::move(lost)));
}

/// Members at a newer state version than the cache holds replace it. A community never changed
/// stays at version 0, which the cache took when it was made: a state read at 0 that arrives
/// after a newer one (a no-op write's roster, a reload a stray notification asked for) is old.
void apply_members(self_ptr self, std::int64_t version, const std::vector<storage::member>& members) {
  auto& st = self->state;
  if (version <= st.version)
    return;
  st.version = std::max(st.version, version);
  revoke(self, st.args.cache->replace(members));
  st.args.cache->set_version(st.version);
}

/// Rooms at a newer state version than the cache's rooms replace them.
void apply_rooms(self_ptr self, std::int64_t version, const std::vector<protocol::room_state>& rooms) {
  auto& cache = *self->state.args.cache;
  if (version <= cache.rooms_version())
    return;
  cache.set_rooms(std::make_shared<const room_index>(rooms, cache.rooms().get()), version);
}

/// Access and archive from a reloaded state newer than the last one applied, then bans. Their
/// versions are their own: this pod's membership writes move the members' version past a
/// change it has not loaded yet (an access switch by comb-admin, another pod's ban), and that
/// change must still be applied when its reload arrives. A state older than the members still
/// brings its bans, with this pod's own newer ban changes replayed on them; the cache's whole
/// version then stays below the database's, so the watcher reloads again.
void apply_access(self_ptr self, const storage::community_access& state) {
  auto& st = self->state;
  auto& cache = *st.args.cache;
  if (state.version > st.access_version) {
    st.access_version = state.version;
    bool was_closed = st.closed;
    bool was_archived = st.archived;
    st.closed = state.closed;
    st.archived = state.archived;
    cache.set_closed(state.closed);
    cache.set_members_may_invite(state.members_may_invite);
    auto& hooks = st.args.hooks;
    if (hooks && (was_archived != state.archived || was_closed != state.closed))
      hooks->forget_hosts(st.args.community_id); // new connections must see the new access at once
    if (state.closed && !was_closed && hooks)
      hooks->recheck_all(st.args.community_id);
  }
  if (state.version > cache.access_version()) {
    if (st.args.bans)
      st.args.bans->replace(state.bans, state.version);
    cache.set_access_version(state.version);
  }
}

/// The next state applied is taken whatever its version: the database went back (a restore, a
/// failover), or a failover put other content at the version the pod holds.
void take_whatever_version(self_ptr self) {
  auto& st = self->state;
  st.version = member_cache::rewound_version;
  st.access_version = member_cache::rewound_version;
  st.args.cache->rewind_versions();
}

/// The database's state, reloaded after a notification or a version check.
void refresh(self_ptr self, const storage::community_access& state) {
  auto& st = self->state;
  auto& hooks = st.args.hooks;
  if (state.exists)
    apply_rooms(self, state.version, state.rooms);
  // A state older than the access last applied (a room write's, read before the watcher's
  // newer reload arrived) does not archive or unarchive.
  if (state.exists && state.version < st.access_version) {
    apply_members(self, state.version, state.members);
    return;
  }
  if (!state.exists || state.archived) {
    // Archived or deleted: nobody may stay. Marked first, so that a connection registering
    // while the open ones are closed is closed as it registers. Unarchiving needs no action
    // here: new connections find the community again through the directory.
    bool was_ended = st.args.cache->ended();
    st.args.cache->set_ended(true);
    if (!was_ended && hooks)
      hooks->close_all(st.args.community_id);
    if (!state.exists)
      return;
  } else {
    st.args.cache->set_ended(false);
  }
  apply_members(self, state.version, state.members);
  apply_access(self, state);
}

/// Bans and unbans of this write, now committed, reach the connections' checks.
void follow_bans(self_ptr self, const storage::membership_write& write) {
  auto& st = self->state;
  if (!st.args.bans)
    return;
  for (std::size_t i = 0; i < st.in_flight.size() && i < write.results.size(); ++i) {
    auto change = st.in_flight[i].command.change;
    auto outcome = write.results[i].outcome;
    bool took_effect = outcome == storage::membership_outcome::changed
                       || outcome == storage::membership_outcome::nothing_to_do;
    if (took_effect && change == storage::membership_change::ban_pubkey)
      st.args.bans->set_pubkey(st.in_flight[i].command.subject, true, write.state_version);
    bool lifted = change == storage::membership_change::unban_pubkey
                  || (change == storage::membership_change::add_member
                      && st.in_flight[i].command.lifts_ban);
    if (took_effect && lifted)
      st.args.bans->set_pubkey(st.in_flight[i].command.subject, false, write.state_version);
  }
}

void committed(self_ptr self, const storage::membership_write& write) {
  follow_bans(self, write);
  apply_members(self, write.state_version, write.members);
  // Removed members left their rooms in the same transaction; otherwise the rooms the cache
  // holds are still current if nothing else wrote between their version and this write.
  if (write.rooms)
    apply_rooms(self, write.state_version, *write.rooms);
  else
    self->state.args.cache->confirm_rooms(write.previous_version, write.state_version);
  // follow_bans applied this write's bans; access is not a membership write's to change.
  self->state.args.cache->confirm_access(write.previous_version, write.state_version);
  if (self->state.args.bans && self->state.args.cache->access_version() == write.state_version)
    self->state.args.bans->settled(write.state_version);
  // A change committed before this write and not loaded yet (a switch to closed by comb-admin,
  // another pod's removal) keeps the cache below it: the local fan-out would check this write's
  // events by rules the database no longer has. The access watcher then delivers them, from
  // noted_events, after it reloads the state they need; the other pods wait for it (bridge).
  const auto version = write.state_version;
  const bool cache_holds_it = self->state.args.cache->whole_version() >= version;
  for (const auto& room_event : write.room_events)
    publish(self, room_event.ev, room_event.json, version, cache_holds_it);
  for (const auto& definition : write.role_definitions)
    publish(self, definition.ev, definition.json, version, cache_holds_it);
  if (write.list)
    publish(self, *write.list, write.list_json, version, cache_holds_it);
  for (const auto& result : write.results)
    if (result.delta)
      publish(self, *result.delta, result.delta_json, version, cache_holds_it);
}

/// The newest list has this second: the batch goes back to the front of the queue, and the
/// queue (with whatever arrives meanwhile) goes as one transaction once `retry_at` began.
void wait_for_clock(self_ptr self, std::int64_t retry_at) {
  auto& st = self->state;
  st.queue.put_back(std::move(st.in_flight));
  st.in_flight.clear();
  st.waiting_for_clock = true;
  auto due = std::chrono::system_clock::time_point(std::chrono::seconds(retry_at));
  auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(
    due - std::chrono::system_clock::now());
  self->delayed_send(self, std::max(delay, std::chrono::milliseconds(1)), wake_atom_v, ++st.clock_wait);
  dispatch(self); // a removal or ban queued while the batch ran goes now
}

void on_applied(self_ptr self, const storage::membership_write& write) {
  auto& st = self->state;
  if (write.retry_at != 0) {
    wait_for_clock(self, write.retry_at);
    return;
  }
  count(self, write);
  if (write.committed)
    committed(self, write);
  for (std::size_t i = 0; i < st.in_flight.size(); ++i) {
    auto result = i < write.results.size()
                    ? write.results[i]
                    : storage::membership_result::of(storage::membership_outcome::failed);
    if (st.in_flight[i].reply_to)
      self->send(st.in_flight[i].reply_to, member_done_atom_v, st.in_flight[i].ticket, result);
  }
  st.in_flight.clear();
  dispatch(self);
}

/// The next room batch that may go (room_queue::start_batch) goes to the writer.
void dispatch_room(self_ptr self) {
  auto commands = self->state.rooms.start_batch();
  if (!commands.empty())
    self->send(self->state.args.membership_writer, room_apply_atom_v, self->state.args.community_id,
               std::move(commands));
}

/// The room's state already has this second: its batch goes again once `retry_at` began, and
/// the other rooms' requests go on meanwhile.
void wait_for_room_clock(self_ptr self, std::int64_t retry_at) {
  auto room = self->state.rooms.retry_batch(retry_at);
  auto due = std::chrono::system_clock::time_point(std::chrono::seconds(retry_at));
  auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(
    due - std::chrono::system_clock::now());
  self->delayed_send(self, std::max(delay, std::chrono::milliseconds(1)), room_wake_atom_v,
                     std::move(room), retry_at);
}

/// After a room transaction: the cache takes the state read after the commit, its events go
/// live (each request, the new state, an issued 9000 or 9001), and each requester hears its
/// outcome. When that read failed, the cache does not hold the change (a room made private is
/// public to it): the events reach local readers from the access watcher, after it reloads the
/// state for them, as another writer's would.
void on_room_applied(self_ptr self, const room_applied& applied) {
  auto& st = self->state;
  if (applied.batch.retry_at != 0) {
    wait_for_room_clock(self, applied.batch.retry_at);
    dispatch_room(self);
    return;
  }
  auto batch = st.rooms.finish_batch();
  if (applied.access)
    refresh(self, *applied.access);
  const auto& writes = applied.batch.writes;
  for (const auto& write : writes)
    for (const auto& ev : write.events)
      publish(self, ev.ev, ev.json, write.state_version, applied.access.has_value());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto outcome = i < writes.size() && writes[i].committed ? writes[i].outcome
                                                            : protocol::room_outcome::failed;
    if (st.args.metrics)
      bump(st.args.metrics->room_writes[static_cast<std::size_t>(outcome)]);
    if (batch[i].reply_to)
      self->send(batch[i].reply_to, room_done_atom_v, batch[i].ticket, outcome);
  }
  dispatch_room(self);
}

} // namespace

caf::behavior community_actor(caf::stateful_actor<community_state>* self, community_args args) {
  self->state.args = std::move(args);
  self->state.version = self->state.args.cache->version();
  self->state.access_version = self->state.args.cache->access_version();
  self->state.closed = self->state.args.cache->closed().value_or(false);
  return {
    [=](member_atom, std::uint64_t ticket, const storage::membership_command& command) {
      auto sender = caf::actor_cast<caf::actor>(self->current_sender());
      if (!self->state.queue.push({sender, ticket, command})) {
        if (auto& metrics = self->state.args.metrics)
          bump(metrics->membership_writes[static_cast<std::size_t>(command.change)]
                                         [static_cast<std::size_t>(storage::membership_outcome::busy)]);
        if (sender)
          self->send(sender, member_done_atom_v, ticket,
                     storage::membership_result::of(storage::membership_outcome::busy));
        return;
      }
      self->state.access_change_queued |= may_take_access(command);
      dispatch(self);
    },
    [=](refresh_atom, const storage::community_access& state) { refresh(self, state); },
    [=](rewind_atom, const storage::community_access& state) {
      take_whatever_version(self);
      if (self->state.args.bans)
        self->state.args.bans->forget_own_changes();
      refresh(self, state);
    },
    [=](retake_atom, const storage::community_access& state) {
      // Read before a write of this pod's own committed: taking it would undo that write, and
      // skipping it could keep what a failover lost. The watcher reads again, after the write.
      // A deleted community is closed whatever its version says.
      auto& st = self->state;
      if (state.exists && std::max({st.version, st.access_version, st.args.cache->rooms_version()}) > state.version) {
        if (auto watcher = caf::actor_cast<caf::actor>(self->current_sender()))
          self->send(watcher, retake_atom_v, state.community_id);
        return;
      }
      take_whatever_version(self);
      refresh(self, state);
    },
    [=](wake_atom, std::uint64_t wait) {
      if (wait != self->state.clock_wait)
        return;
      self->state.waiting_for_clock = false;
      dispatch(self);
    },
    [=](applied_atom, const storage::membership_write& write) { on_applied(self, write); },
    [=](room_atom, std::uint64_t ticket, const storage::room_command& command) {
      auto sender = caf::actor_cast<caf::actor>(self->current_sender());
      if (!self->state.rooms.push({sender, ticket, command})) {
        if (auto& metrics = self->state.args.metrics)
          bump(metrics->room_writes[static_cast<std::size_t>(protocol::room_outcome::busy)]);
        if (sender)
          self->send(sender, room_done_atom_v, ticket, protocol::room_outcome::busy);
        return;
      }
      dispatch_room(self);
    },
    [=](room_applied_atom, const room_applied& applied) { on_room_applied(self, applied); },
    // From the access watcher: events another writer's change wrote, sent after the state it
    // reloaded for them, so the cache and the revocations reach the fan-out first.
    [=](publish_atom, committed_event& committed) {
      self->send(self->state.args.fanout, publish_atom_v, std::move(committed));
    },
    [=](room_wake_atom, const std::string& room, std::int64_t retry_at) {
      self->state.rooms.release(room, retry_at);
      dispatch_room(self);
    },
  };
}

} // namespace comb::actors
