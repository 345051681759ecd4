// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <memory>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/fanout/subscription_index.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "actors/storage/reader_waits.hpp"

namespace comb::actors {

/// One event in one community.
struct delivered_key {
  std::int64_t community_id = 0;
  protocol::bytes32 id{};
  friend bool operator==(const delivered_key&, const delivered_key&) = default;
};

struct delivered_key_hash {
  std::size_t operator()(const delivered_key& key) const noexcept {
    return protocol::bytes32_hash{}(key.id) ^ (std::hash<std::int64_t>{}(key.community_id) * 31);
  }
};

/// What the fan-out needs: where history queries go, and the counters.
struct fanout_args {
  std::vector<caf::actor> readers;
  std::shared_ptr<relay_metrics> metrics;
  std::shared_ptr<reader_waits> readers_waiting; ///< steers queries off waiting readers
};

/// A connection with live subscriptions on this pod, and where its deliveries of the current
/// turn are held: finding them through the connection's own entry, rather than a map from owner
/// to batch, saved a hash node allocated and freed per connection per turn.
struct fanout_connection {
  static constexpr std::size_t no_batch = static_cast<std::size_t>(-1);
  caf::actor actor;
  std::size_t held = no_batch; ///< index in fanout_state::held, or no_batch
  std::uint64_t reached_in = 0; ///< the last rate interval (`fanout_state::rate_epoch`) it got a delivery in
};

/// The deliveries of the current turn for one connection, not yet sent.
struct held_deliveries {
  fanout_connection* to = nullptr; ///< stable: a connection is forgotten only after send_held
  live_batch batch;
};

struct fanout_state {
  fanout_args args;
  std::unordered_map<std::int64_t, subscription_index> communities;
  std::unordered_map<std::uint64_t, fanout_connection> connections;
  /// Connections with subscriptions, by community, for revocation.
  std::unordered_map<std::int64_t, std::unordered_set<std::uint64_t>> subscribers;
  /// (community, id) pairs delivered recently, whichever way they came (local commit, Postgres
  /// notification, Redis, CAF peer): each event reaches a community's subscriptions once, and
  /// one event published to two communities reaches both. Bounded: oldest forgotten first.
  std::unordered_set<delivered_key, delivered_key_hash> recent;
  std::deque<delivered_key> recent_order;
  /// created_at of the newest 13534 delivered per community: an older list (a late envelope,
  /// a list re-sent at start-up) never follows a newer one.
  std::unordered_map<std::int64_t, std::int64_t> newest_list_at;
  /// This turn's deliveries, one batch per connection, sent when the mailbox holds nothing more
  /// to fan out (or past `max_held_deliveries`): a burst of events reaches each connection in
  /// one message and its socket in few writes. Any other message sends them first.
  std::vector<held_deliveries> held;
  std::size_t held_count = 0;                             ///< deliveries in `held`
  std::size_t publishes_while_held = 0; ///< handled since the oldest held delivery
  /// The pod delivers fast enough that held deliveries wait for the coalescing window (see
  /// `coalesce_above_rate`) instead of leaving as soon as the mailbox runs dry.
  bool coalescing = false;
  caf::actor_clock::time_point rate_since{};   ///< start of the current rate interval
  std::size_t delivered_since = 0;             ///< deliveries held since `rate_since`
  std::size_t reached_since = 0;               ///< connections that got one of them
  std::uint64_t rate_epoch = 1;                ///< counts rate intervals
  /// How long held deliveries wait while coalescing (see `window_for`).
  caf::timespan window{};
  /// A flush is scheduled for the held deliveries; its epoch is `flush_epoch` (a flush of an
  /// older epoch finds its deliveries already sent and does nothing).
  bool flush_scheduled = false;
  std::uint64_t flush_epoch = 0;
  std::vector<subscription_index::match_ref> matches;     ///< scratch of one publish
  static inline const char* name = "fanout";
};

/// The pod's live subscriptions. A subscribe registers the filters, then passes the history
/// query on to a storage reader, so the live part always exists before history is read.
/// A published event goes once to each connection with matching subscriptions.
/// Deliveries held at most before they are sent, whatever the mailbox holds: bounds the memory
/// and the delay a long burst adds to its first events.
inline constexpr std::size_t max_held_deliveries = 2048;
/// The same bound while coalescing: a window's events to a thousand connections, so that each
/// connection gets several frames per deliver message and per `sendmsg`.
inline constexpr std::size_t max_held_coalescing = 16384;
/// Publishes handled at most while deliveries are held (most of them may match nothing here):
/// bounds the delay when the mailbox never runs dry.
inline constexpr std::size_t max_held_publishes = 256;

/// Deliveries per second past which the pod is loaded beyond moderate use: then what a delivery
/// costs is mostly per connection and turn (a CAF message, a wake-up of the socket's writer, a
/// `sendmsg` whose loopback receive path runs in the relay's time), so a turn's deliveries wait
/// up to `coalescing_window` for the events after them and leave together. Below it (10
/// subscribers × 2,000 ev/s is 20,000 per second) every turn still goes out at once.
inline constexpr double coalesce_above_rate = 50'000;
/// Shortest a held delivery waits for company while coalescing: small next to the seconds a
/// saturated relay's queues would add. Side by side on a quiet machine (docs/benchmarks.md), 5 ms
/// cut relay CPU per delivery only where a connection gets 1,000 events per second; 20 ms also
/// where it gets 200.
inline constexpr std::chrono::milliseconds coalescing_window{20};
/// What a delivery costs is mostly per connection and write, so the window lengthens until each
/// connection gets about this many events per write (at the rate of the last interval)...
inline constexpr double coalesced_events_per_write = 8;
/// ...but never past this: the bound on the delay the window adds to publish-to-deliver. 1,000
/// connections at 200 events per second each get 40 ms; at 1,000 per second, 20 ms.
inline constexpr std::chrono::milliseconds max_coalescing_window{50};

/// The window for `deliveries` that reached `connections` in `seconds`.
[[nodiscard]] caf::timespan window_for(std::size_t deliveries, std::size_t connections, double seconds);
/// How often the delivery rate is measured.
inline constexpr std::chrono::milliseconds rate_interval{100};

caf::behavior fanout_actor(caf::stateful_actor<fanout_state>* self, fanout_args args);

} // namespace comb::actors
