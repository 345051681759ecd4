// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/bridge/bridge_transport.hpp"
#include "actors/bridge/inbound_bound.hpp"
#include "actors/bridge/envelope_hold.hpp"
#include "actors/bridge/fill_backoff.hpp"
#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "storage/bridge_envelope.hpp"
#include "storage/bridge_replay.hpp"
#include "storage/bridge_sequence.hpp"

namespace comb::actors {

struct bridge_args {
  std::string node_id;
  caf::actor fanout;
  std::shared_ptr<community_registry> registry;
  std::shared_ptr<bridge_transport> redis; ///< may be null (no Redis)
  std::string cluster_secret;              ///< MACs every envelope (Redis and CAF)
  std::shared_ptr<relay_metrics> metrics;
  /// Envelopes from Redis and the gatekeeper on their way here, not yet checked.
  std::shared_ptr<inbound_bound> inbound = std::make_shared<inbound_bound>();
  hold_bounds hold{}; ///< what may wait for this pod to catch up with the database
  /// The relay key's public half: it, or a community's key derived from it, signs the kinds only
  /// the relay publishes (forged_relay_kind); none: not checked (tests without keys).
  std::optional<protocol::bytes32> relay_pubkey;
};

/// How often a bridge repeats its last envelope number to the other pods (a heartbeat), so they
/// notice what they missed of it even while it sends nothing else.
inline constexpr std::chrono::seconds heartbeat_interval{2};
/// How long a gap fill waits for others to join it (and for the transports to settle).
inline constexpr std::chrono::seconds fill_settle{1};

/// Tells the bridge which gatekeeper carries its envelopes to CAF peers.
struct bridge_gate {
  caf::actor gate;
};

/// Tells the bridge the pod's access watcher, which it asks to re-read a community from Postgres
/// when an envelope names a newer state version than this pod holds, and its gap filler
/// (actors/community/gap_filler.hpp), which it asks to hand the fan-out what never came.
struct bridge_watcher {
  caf::actor watcher;
  caf::actor filler;
};

struct bridge_state {
  bridge_args args;
  /// The gatekeeper (actors/bridge/gatekeeper.hpp), when cluster links are configured.
  caf::actor gate;
  /// When a dropped envelope was last logged (seconds), so a flood gives one line a second.
  std::int64_t last_drop_log = 0;
  /// When another run under this pod's node id was last logged (seconds): one line a minute.
  std::int64_t last_namesake_log = 0;
  /// This pod's run: the start of its envelope numbering, and the last number it used.
  std::int64_t started_ms = storage::envelope_clock_ms();
  std::uint64_t last_seq = 0;
  /// Refuses envelopes sent before this pod started and replays its memory forgot.
  storage::replay_guard replays{started_ms};
  /// The other pods' numbering, which shows envelopes of theirs that never came.
  storage::origin_sequences sequences{started_ms};
  /// Fills asked for since the last one (the earliest time they reach back to): one a second.
  std::optional<std::int64_t> fill_since;
  /// How long a fill asked again after a failure waits.
  fill_backoff fill_retry;
  /// When the pending fill is due, and the number of the timer that runs it (older ones are
  /// ignored: a fresh gap moves a retry's fill earlier).
  fill_backoff::clock::time_point fill_due{};
  std::uint64_t fill_timer = 0;
  /// Events whose origin held a newer state version of their community than this pod does.
  envelope_hold held;
  bool release_pending = false; ///< a release check is scheduled
  /// The access watcher (actors/community/access_watcher.hpp), and per community the newest
  /// version already asked of it while events wait.
  caf::actor watcher;
  std::unordered_map<std::int64_t, std::int64_t> asked;
  /// Asks sent to the watcher so far, each numbered by it: an answer drops only events held
  /// before its ask.
  std::int64_t asks_sent = 0;
  caf::actor filler; ///< the gap filler

  static inline const char* name = "bridge";
};

/// One per pod. Sends every locally accepted event, as an envelope with a MAC, to the other pods
/// (Redis and/or the gatekeeper's CAF peers), with the community's state version this pod holds,
/// and hands what they send to local fan-out only, never to storage. Drops envelopes without a
/// valid MAC, its own echoes, and replays (storage/bridge_replay.hpp); holds an event whose
/// origin held a newer state version of its community until this pod's member cache reaches it
/// (asking the access watcher to re-read Postgres), so a reader the origin already removed never
/// gets it here; the fan-out drops anything it has already delivered. Numbers what it sends to
/// all pods and sends a heartbeat every `heartbeat_interval`; a number it did not receive of
/// another pod (storage/bridge_sequence.hpp), like a transport's loss, has the gap filler read
/// what Postgres stored since (one fill a second at most), whose events it holds or delivers as
/// it does envelopes. A fill that did not bring what it should (Postgres did not answer, or
/// its events or an envelope's expired in the hold or did not fit) is asked again, each time
/// later (fill_backoff.hpp). Member caches never follow what arrives here: the database is the
/// authority (actors/community/access_watcher.hpp). Never reachable from the network: only the
/// gatekeeper talks to remote nodes.
caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, bridge_args args);

} // namespace comb::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::bridge_gate)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::bridge_watcher)
