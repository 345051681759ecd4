// SPDX-License-Identifier: MIT
#include "actors/bridge/bridge_actor.hpp"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <limits>
#include <utility>

#include "actors/bridge/bridged_ephemeral.hpp"
#include "actors/bridge/gatekeeper.hpp"
#include "protocol/kind_rules.hpp"
#include "storage/bridge_envelope.hpp"
#include "storage/event_store.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<bridge_state>*;

/// Pods trust each other's sizes (relay-written lists of big communities are large), not
/// their content: signatures are still verified.
protocol::protocol_limits envelope_limits() {
  protocol::protocol_limits limits;
  limits.max_tags_per_event = 1'000'000;
  limits.max_tag_elements_per_event = 4'000'000;
  limits.max_content_bytes = 64 * 1024 * 1024;
  return limits;
}

void send_to_all_pods(self_ptr self, const std::string& envelope) {
  auto& st = self->state;
  if (st.args.redis)
    st.args.redis->publish(envelope);
  if (st.gate)
    self->send(st.gate, gate_order{gate_order::kind::send_all, {}, envelope});
}

void send_everywhere(self_ptr self, const std::string& envelope) {
  send_to_all_pods(self, envelope);
  bump(self->state.args.metrics->bridge_published);
}

/// The pending fill is due after `wait`; a timer set for it before is ignored.
void schedule_fill(self_ptr self, std::chrono::milliseconds wait) {
  auto& st = self->state;
  st.fill_due = fill_backoff::clock::now() + wait;
  self->delayed_send(self, wait, fill_atom_v, ++st.fill_timer);
}

/// What other pods sent since `since_ms` may never have come: a fill from Postgres, joined
/// with any other asked for before it is due. It is due after `fill_settle`, or when it is
/// asked again because one did not bring what it should (`retry`), after the backoff's wait;
/// a fresh gap does not wait for a retry's backoff.
void ask_fill(self_ptr self, std::int64_t since_ms, bool retry = false) {
  auto& st = self->state;
  if (retry)
    bump(st.args.metrics->bridge_fill_retries);
  const auto now = fill_backoff::clock::now();
  if (st.fill_since) {
    st.fill_since = std::min(*st.fill_since, since_ms);
    if (!retry && st.fill_due > now + fill_settle)
      schedule_fill(self, fill_settle);
    return;
  }
  st.fill_since = since_ms;
  schedule_fill(self, retry ? st.fill_retry.next(now) : std::chrono::milliseconds(fill_settle));
}

/// This pod's last envelope number, to every pod (nothing when there is nowhere to send it);
/// and, on the same beat, a fill of what other pods gone silent may have stored
/// (storage::origin_sequences::quiet).
void send_heartbeat(self_ptr self) {
  auto& st = self->state;
  if (st.args.redis || st.gate)
    send_to_all_pods(self, storage::encode_heartbeat(st.args.cluster_secret, st.args.node_id,
                                                     {st.started_ms, st.last_seq}));
  if (auto since = st.sequences.quiet(storage::envelope_clock_ms())) {
    bump(st.args.metrics->bridge_quiet_fills);
    ask_fill(self, *since);
  }
  self->delayed_send(self, heartbeat_interval, beat_atom_v);
}

void fill_now(self_ptr self, std::uint64_t timer) {
  auto& st = self->state;
  if (timer != st.fill_timer)
    return; // replaced by an earlier one
  auto since = std::exchange(st.fill_since, std::nullopt);
  if (!since || !st.filler)
    return;
  bump(st.args.metrics->bridge_gap_fills);
  self->send(st.filler, ready_atom_v, *since);
}

/// A number (or heartbeat) of another pod came: a gap in them is a fill.
void note_number(self_ptr self, const storage::bridge_envelope& e, std::int64_t now) {
  auto& st = self->state;
  if (auto since = st.sequences.heard(e.origin, e.number, e.heartbeat, now, e.sent_ms)) {
    bump(st.args.metrics->bridge_sequence_gaps);
    ask_fill(self, *since);
  }
}

/// The state version of `community_id` this pod holds whole (members and rooms may come from
/// different writes); the newest possible when the pod does not serve it (nobody here reads it).
std::int64_t held_version(self_ptr self, std::int64_t community_id) {
  return self->state.args.registry->held_version(community_id);
}

/// Whether an event that needs `version` of its community waits in the hold: when the pod does
/// not hold that version yet, or when earlier events of its community wait there (it would
/// otherwise overtake them: a deletion shown before its target).
bool must_wait(self_ptr self, std::int64_t community_id, std::int64_t version) {
  return version > held_version(self, community_id) || self->state.held.holds(community_id);
}

/// The version a receiver must hold before it delivers: the version read right after the event
/// committed, or what this pod's member cache has if newer (the community actor applies its own
/// writes before it publishes their events; an ephemeral event has only that).
std::int64_t origin_version(self_ptr self, const committed_event& committed) {
  auto community = self->state.args.registry->find(committed.community_id);
  if (!community)
    return committed.stored_version;
  const auto& cache = *community->members;
  return std::max({cache.version(), cache.rooms_version(), committed.stored_version});
}

std::string numbered_envelope(self_ptr self, const committed_event& committed) {
  auto& st = self->state;
  return storage::encode_numbered_envelope(st.args.cluster_secret, st.args.node_id,
                                           {st.started_ms, ++st.last_seq}, committed.community_id,
                                           origin_version(self, committed),
                                           *committed.event.json, storage::envelope_clock_ms(),
                                           committed.event.borrowed_rooms.get());
}

/// Seconds on the steady clock: the pacing of the bridge's log lines.
std::int64_t steady_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

/// Counts a dropped envelope (unless the caller did); logs at most one line a second (a flood
/// must not fill the disk).
void drop(self_ptr self, const storage::envelope_refusal& refusal, bool count = true) {
  auto& st = self->state;
  if (count)
    bump(refusal.unauthenticated ? st.args.metrics->bridge_unauthenticated
         : refusal.stale         ? st.args.metrics->bridge_stale
                                 : st.args.metrics->bridge_rejected);
  const auto second = steady_seconds();
  if (st.last_drop_log == second)
    return;
  st.last_drop_log = second;
  spdlog::warn("bridge: dropped an envelope: {}", refusal.why);
}

/// A kind only the relay publishes (member lists, deltas, room state; 19004, which comb never
/// writes) signed by another key than the community's or the relay key it derives from: only a
/// holder of the cluster secret can send it, and apps would take it for the relay's word (a
/// list dated far ahead would also stop every later list here: the fan-out's lists only move
/// forward).
bool forged_relay_kind(const bridge_args& args, const protocol::event& ev,
                       const std::optional<community_handle>& community) {
  if (!protocol::relay_only_kind(ev.kind))
    return false;
  if (ev.kind == protocol::room_creation_grant_kind)
    return true;
  if (!community || !community->signer || !args.relay_pubkey)
    return false; // not served here (nobody reads it), or no keys to check against (tests)
  return ev.pubkey != *community->signer && ev.pubkey != *args.relay_pubkey;
}

/// Live delivery only: member caches follow the database (access watcher), never a bridged
/// 13534, so a late envelope cannot roll one back.
void deliver(self_ptr self, committed_event committed) {
  auto& st = self->state;
  const auto& ev = *committed.event.ev;
  const bool ephemeral = protocol::classify(ev.kind) == protocol::kind_class::ephemeral;
  auto community = (ephemeral || protocol::relay_only_kind(ev.kind)) && st.args.registry
                     ? st.args.registry->find(committed.community_id)
                     : std::nullopt;
  if (forged_relay_kind(st.args, ev, community)) {
    bump(st.args.metrics->bridge_rejected);
    return drop(self, {false, "a kind only the relay publishes, signed by another key", false}, false);
  }
  if (ephemeral && community && withholds_bridged(ev, *community->members)) {
    bump(st.args.metrics->bridge_withheld);
    return drop(self, {false, "an ephemeral event whose author this pod does not hold as one who may post"
                              " it (is its origin cut off from Postgres?)", false}, false);
  }
  self->send(st.args.fanout, publish_atom_v, std::move(committed));
}

/// How often held events are checked against the member caches while any wait.
constexpr std::chrono::milliseconds release_interval{20};

void schedule_release(self_ptr self) {
  if (!std::exchange(self->state.release_pending, true))
    self->delayed_send(self, release_interval, tick_atom_v);
}

/// Events the hold let go undelivered: counted, logged as `why`, and asked of a fill (stored by
/// their origin, a fill brings them from Postgres once this pod catches up).
void dropped_from_hold(self_ptr self, const envelope_hold::released& out, const char* why) {
  if (out.expired == 0)
    return;
  bump(self->state.args.metrics->bridge_hold_dropped, out.expired);
  drop(self, {false, why, false}, false);
  ask_fill(self, *out.expired_since, true);
}

/// Held events whose community caught up go to the fan-out; those that waited too long go.
void release_held(self_ptr self) {
  auto& st = self->state;
  st.release_pending = false;
  auto out = st.held.release(envelope_hold::clock::now(),
                             [self](std::int64_t id) { return held_version(self, id); });
  for (auto& committed : out.ready)
    deliver(self, std::move(committed));
  dropped_from_hold(self, out, "this pod did not reach the community state version of the event's"
                              " origin in time (is Postgres reachable?)");
  st.args.metrics->bridge_holding.store(static_cast<std::int64_t>(st.held.size()));
  if (st.held.empty())
    st.asked.clear();
  else
    schedule_release(self);
}

/// Asks the access watcher to catch `community` up to `version` now, and to say when the
/// database holds less.
void ask_watcher(self_ptr self, std::int64_t community, std::int64_t version) {
  auto& st = self->state;
  st.asked[community] = version;
  self->send(st.watcher, access_atom_v, community, version, ++st.asks_sent);
}

/// The database, read for ask number `ask`, holds `version` of the community, below what
/// events held before that ask claimed: those claims were false (or the database went back).
/// They go now rather than hold every later event of the community up for their whole wait;
/// what of them is stored comes back by a fill, with the version the database gives it. Events
/// held since the ask may name a commit after the read: they are asked about again.
void drop_false_claims(self_ptr self, std::int64_t community, std::int64_t version, std::int64_t ask) {
  auto& st = self->state;
  auto out = st.held.drop_above(community, version, ask);
  if (auto asked = st.asked.find(community); asked != st.asked.end()) {
    asked->second = std::min(asked->second, version);
    if (const auto highest = st.held.highest_claim(community); highest > asked->second)
      ask_watcher(self, community, highest);
  }
  if (out.expired == 0)
    return;
  dropped_from_hold(self, out, "its origin claimed a community state version the database does not hold");
  st.args.metrics->bridge_holding.store(static_cast<std::int64_t>(st.held.size()));
  if (!st.held.empty())
    schedule_release(self); // what waited behind them may go now
}

/// The origin held a newer state of the community: it may have removed a reader this pod still
/// admits. Hold the event (bounded, counted) and ask for the database's state now rather than
/// waiting for the notification. `missed_since_ms`: where a fill reaches back to if it is dropped.
void hold(self_ptr self, committed_event committed, std::int64_t version, std::int64_t missed_since_ms) {
  auto& st = self->state;
  const auto community = committed.community_id;
  if (version == storage::unknown_state_version) {
    // Its origin could not read the version it was stored under, and no pod ever holds this
    // one: held, it would stand at the head of its community's queue until it expired, holding
    // up every later event there. A fill brings it with the version the database has then.
    bump(st.args.metrics->bridge_hold_dropped);
    return ask_fill(self, missed_since_ms, true);
  }
  if (!st.held.hold(std::move(committed), version, envelope_hold::clock::now(), missed_since_ms, st.asks_sent)) {
    bump(st.args.metrics->bridge_hold_dropped);
    ask_fill(self, missed_since_ms, true);
    return drop(self, {false, "too many bridged events wait for this pod to catch up with the"
                              " database", false}, false);
  }
  bump(st.args.metrics->bridge_held);
  st.args.metrics->bridge_holding.store(static_cast<std::int64_t>(st.held.size()));
  if (st.watcher && version > st.asked[community])
    ask_watcher(self, community, version);
  schedule_release(self);
}

/// Counts a replay and says why, at most once a second.
void refuse_replay(self_ptr self, storage::replay_verdict verdict) {
  auto& st = self->state;
  bump(st.args.metrics->bridge_replays);
  const char* why = verdict == storage::replay_verdict::before_start
                      ? "envelope sent before this pod started (a replay)"
                    : verdict == storage::replay_verdict::below_floor
                      ? "envelope sent before the replay floor (its memory of envelopes was full)"
                      : "envelope already received (a replay, or two transports)";
  if (verdict != storage::replay_verdict::seen)
    drop(self, {false, why, false}, false);
}

/// Whether an envelope carrying this pod's node id is this run's own echo. One numbered in
/// another run is a second pod started with the same COMB_NODE_ID (a value copied into every
/// replica): its events are taken as any other pod's, and the operator is told.
bool own_echo(self_ptr self, const storage::bridge_envelope& e) {
  auto& st = self->state;
  if (e.origin != st.args.node_id)
    return false;
  if (e.number.boot_ms == 0 || e.number.boot_ms == st.started_ms)
    return true;
  bump(st.args.metrics->bridge_namesakes);
  const auto now = steady_seconds();
  if (st.last_namesake_log == 0 || now - st.last_namesake_log >= 60) {
    st.last_namesake_log = now;
    spdlog::error("bridge: another pod runs under this pod's node id \"{}\" (its run began at {} ms,"
                  " this one at {} ms): give each pod its own COMB_NODE_ID, or leave it unset",
                  e.origin, e.number.boot_ms, st.started_ms);
  }
  return false;
}

void receive(self_ptr self, const std::string& payload) {
  auto& st = self->state;
  const auto now = storage::envelope_clock_ms();
  auto envelope = storage::decode_envelope(payload, envelope_limits(), st.args.cluster_secret, now);
  if (!envelope)
    return drop(self, envelope.error());
  auto& e = envelope.value();
  if (own_echo(self, e))
    return;
  if (e.heartbeat)
    return note_number(self, e, now);
  const auto raises = st.replays.floor_raises();
  auto verdict = st.replays.admit(e.community_id, e.ev->id, e.sent_ms, now);
  bump(st.args.metrics->bridge_floor_raised, st.replays.floor_raises() - raises);
  if (verdict != storage::replay_verdict::fresh) {
    // Its origin sent this event again under a new number (a client repeating an ephemeral
    // event, a client of two pods): the number still counts, or the next would look like a gap
    // and every other pod would fill from Postgres. The MAC and the send time were checked.
    if (verdict == storage::replay_verdict::seen)
      note_number(self, e, now);
    return refuse_replay(self, verdict);
  }
  note_number(self, e, now);
  bump(st.args.metrics->bridge_received);
  committed_event committed{e.community_id, live_event{e.ev, e.event_json, e.borrowed_rooms}};
  if (must_wait(self, e.community_id, e.access_version))
    return hold(self, std::move(committed), e.access_version, now);
  deliver(self, std::move(committed));
}

/// An envelope from Redis or the gatekeeper, which took its place in the inbound bound: checked,
/// then the place is given back.
void receive_counted(self_ptr self, const std::string& payload) {
  receive(self, payload);
  self->state.args.inbound->give_back(payload.size());
}

} // namespace

caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, bridge_args args) {
  self->state.args = std::move(args);
  self->state.held = envelope_hold(self->state.args.hold);
  self->delayed_send(self, heartbeat_interval, beat_atom_v);
  return {
    [=](publish_atom, const committed_event& committed) {
      send_everywhere(self, numbered_envelope(self, committed));
    },
    // This pod's writer stored it under a version the pod does not hold yet (a removal other
    // pods or comb-admin made, not reloaded here): held like such an envelope; dropped, it is
    // filled again from Postgres.
    [=](await_atom, committed_event& committed) {
      const auto version = committed.stored_version;
      if (must_wait(self, committed.community_id, version))
        return hold(self, std::move(committed), version, storage::envelope_clock_ms());
      deliver(self, std::move(committed));
    },
    [=](redis_atom, const std::string& payload) { receive_counted(self, payload); },
    [=](drain_atom) { return true; }, // a stopping pod: what came before has been sent
    // Redis, or a cluster link (from the gatekeeper), was back after a loss: what other pods
    // sent meanwhile never came. The gap filler hands the local fan-out what was stored since
    // (it drops what it delivered).
    [=](ready_atom, std::int64_t lost_at_ms) { ask_fill(self, lost_at_ms); },
    [=](fill_atom, std::uint64_t timer) { fill_now(self, timer); },
    [=](unfilled_atom, std::int64_t lost_at_ms) { ask_fill(self, lost_at_ms, true); },
    // From the gap filler: held like an envelope whose origin had `version`; dropped, it is
    // filled again from where its gap began.
    [=](gap_atom, committed_event& committed, std::int64_t version, std::int64_t lost_at_ms) {
      if (must_wait(self, committed.community_id, version))
        return hold(self, std::move(committed), version, lost_at_ms);
      deliver(self, std::move(committed));
    },
    [=](beat_atom) { send_heartbeat(self); },
    // From the gatekeeper, which lets through only peers that proved the secret.
    [=](envelope_atom, const std::string& payload) { receive_counted(self, payload); },
    [=](bridge_gate& gate) { self->state.gate = std::move(gate.gate); },
    [=](bridge_watcher& watcher) {
      self->state.watcher = std::move(watcher.watcher);
      self->state.filler = std::move(watcher.filler);
    },
    [=](tick_atom) { release_held(self); },
    [=](database_version_atom, std::int64_t community, std::int64_t version, std::int64_t ask) {
      drop_false_claims(self, community, version, ask);
    },
  };
}

} // namespace comb::actors
