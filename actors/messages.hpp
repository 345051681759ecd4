// SPDX-License-Identifier: MIT
#pragma once
// Every message between comb's actors: atoms and payload types, grouped by the edges of the
// message graph (each group's header names who sends to whom).

#include <atomic>
#include <boost/container/small_vector.hpp>
#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/connection/connection.hpp"
#include "actors/fanout/subscription_index.hpp"
#include "actors/frame_sink.hpp"
#include "actors/waiting_place.hpp"
#include "protocol/filter.hpp"
#include "storage/access_state.hpp"
#include "storage/event_store.hpp"
#include "storage/membership.hpp"
#include "storage/room_store.hpp"

namespace comb::actors {

// -- session -> connection ----------------------------------------------------------------------
using frame_atom = caf::atom_constant<caf::atom("frame")>;       ///< (frame_atom, std::string text)
inline constexpr frame_atom frame_atom_v{};
using hangup_atom = caf::atom_constant<caf::atom("hangup")>;     ///< the socket closed
inline constexpr hangup_atom hangup_atom_v{};

// -- connection -> storage -> connection --------------------------------------------------------
using store_atom = caf::atom_constant<caf::atom("store")>;       ///< (store_atom, ok_route, event_write): the writer answers on the route
inline constexpr store_atom store_atom_v{};
using query_atom = caf::atom_constant<caf::atom("query")>;       ///< (query_atom, history_request)
inline constexpr query_atom query_atom_v{};
using history_atom = caf::atom_constant<caf::atom("history")>;   ///< (history_atom, sub, generation, query_result): one chunk; `last` ends the reply
inline constexpr history_atom history_atom_v{};
using count_atom = caf::atom_constant<caf::atom("count")>;       ///< (count_atom, history_request)
inline constexpr count_atom count_atom_v{};
using counted_atom = caf::atom_constant<caf::atom("counted")>;   ///< (counted_atom, sub, ticket, count_result)
inline constexpr counted_atom counted_atom_v{};

// -- connection <-> fan-out ---------------------------------------------------------------------
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;   ///< (subscribe_atom, live_request)
inline constexpr subscribe_atom subscribe_atom_v{};
using subscribed_atom = caf::atom_constant<caf::atom("subscribd")>;  ///< (subscribed_atom, sub, generation)
inline constexpr subscribed_atom subscribed_atom_v{};
using unsubscribe_atom = caf::atom_constant<caf::atom("unsub")>;     ///< (unsubscribe_atom, owner, sub)
inline constexpr unsubscribe_atom unsubscribe_atom_v{};
using forget_atom = caf::atom_constant<caf::atom("forget")>;         ///< (forget_atom, owner): all of it
inline constexpr forget_atom forget_atom_v{};
using publish_atom = caf::atom_constant<caf::atom("publish")>;       ///< (publish_atom, committed_event) or a writer's (publish_atom, committed_events)
inline constexpr publish_atom publish_atom_v{};
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;       ///< (deliver_atom, live_batch)
inline constexpr deliver_atom deliver_atom_v{};

// -- membership: connection -> community actor -> membership writer ------------------------------
using member_atom = caf::atom_constant<caf::atom("member")>;         ///< (member_atom, ticket, membership_command)
inline constexpr member_atom member_atom_v{};
using member_done_atom = caf::atom_constant<caf::atom("memberdone")>; ///< (member_done_atom, ticket, membership_result)
inline constexpr member_done_atom member_done_atom_v{};
using apply_atom = caf::atom_constant<caf::atom("apply")>;           ///< (apply_atom, community, std::vector<membership_command>)
inline constexpr apply_atom apply_atom_v{};
using applied_atom = caf::atom_constant<caf::atom("applied")>;       ///< (applied_atom, membership_write)
inline constexpr applied_atom applied_atom_v{};
using mint_atom = caf::atom_constant<caf::atom("mint")>;             ///< (mint_atom, ticket, community, requester, waiting_place_ptr)
inline constexpr mint_atom mint_atom_v{};
using minted_atom = caf::atom_constant<caf::atom("minted")>;         ///< (minted_atom, ticket, invite_reply)
inline constexpr minted_atom minted_atom_v{};
using revoke_atom = caf::atom_constant<caf::atom("revoke")>;         ///< (revoke_atom, community, std::vector<bytes32>)
inline constexpr revoke_atom revoke_atom_v{};

// -- rooms (NIP-29): connection -> community actor -> membership writer ---------------------------
using room_atom = caf::atom_constant<caf::atom("room")>;             ///< (room_atom, ticket, room_command)
inline constexpr room_atom room_atom_v{};
using room_done_atom = caf::atom_constant<caf::atom("roomdone")>;    ///< (room_done_atom, ticket, room_outcome)
inline constexpr room_done_atom room_done_atom_v{};
using room_apply_atom = caf::atom_constant<caf::atom("roomapply")>;  ///< (room_apply_atom, community, vector<room_command>)
inline constexpr room_apply_atom room_apply_atom_v{};
using room_applied_atom = caf::atom_constant<caf::atom("roomaplied")>; ///< (room_applied_atom, room_applied)
inline constexpr room_applied_atom room_applied_atom_v{};
using room_wake_atom = caf::atom_constant<caf::atom("roomwake")>;    ///< (room, second): the second a room's state needed has begun
inline constexpr room_wake_atom room_wake_atom_v{};

// -- NIP-86: HTTP session -> management actor -> community actor ---------------------------------
using manage_atom = caf::atom_constant<caf::atom("manage")>;         ///< (manage_atom, management_call, management_callback)
inline constexpr manage_atom manage_atom_v{};
using overdue_atom = caf::atom_constant<caf::atom("overdue")>;       ///< (overdue_atom, ticket): give up waiting
inline constexpr overdue_atom overdue_atom_v{};

// -- authority: Postgres notifications -> access watcher -> community actors -> connections ----
using notice_atom = caf::atom_constant<caf::atom("pgnotice")>;     ///< (notice_atom): notifications wait in the watcher's notice_inbox
inline constexpr notice_atom notice_atom_v{};
using reload_atom = caf::atom_constant<caf::atom("reloadall")>;    ///< LISTEN (re)connected: reload every community
inline constexpr reload_atom reload_atom_v{};
using refresh_atom = caf::atom_constant<caf::atom("refresh")>;     ///< (refresh_atom, community_access): the database's state
inline constexpr refresh_atom refresh_atom_v{};
/// (rewind_atom, community_access): the database's state, whose version is older than what the
/// pod holds (a restore, a failover): taken whatever its version
using rewind_atom = caf::atom_constant<caf::atom("rewind")>;
inline constexpr rewind_atom rewind_atom_v{};
/// (retake_atom, community_access): the database's state read as the LISTEN connection came
/// back: taken at the version the pod holds too (a failover may have put other content there),
/// unless the pod's own writes reached a newer one since it was read; then the community actor
/// answers (retake_atom, community id) and the watcher reads it again
using retake_atom = caf::atom_constant<caf::atom("retake")>;
inline constexpr retake_atom retake_atom_v{};
using wake_atom = caf::atom_constant<caf::atom("wake")>;           ///< the second a waiting list needed has begun
inline constexpr wake_atom wake_atom_v{};
using access_atom = caf::atom_constant<caf::atom("access")>;       ///< (access_atom, community): access changed, re-check
inline constexpr access_atom access_atom_v{};
/// (database_version_atom, community, version, ask): the access watcher's answer to the bridge's
/// (access_atom, community, claimed, ask) when the database, read after the ask, holds less than
/// the envelope's origin claimed: that claim was false (or the database went back); events held
/// after the ask was sent are not judged by it
using database_version_atom = caf::atom_constant<caf::atom("dbversion")>;
inline constexpr database_version_atom database_version_atom_v{};

// -- bridge: transports and peers -> bridge actor -> fan-out / community actors; bridge <-> gap filler
using envelope_atom = caf::atom_constant<caf::atom("envelope")>;     ///< (envelope_atom, payload) from a CAF peer
inline constexpr envelope_atom envelope_atom_v{};
using redis_atom = caf::atom_constant<caf::atom("redis")>;           ///< (redis_atom, payload) from Redis
inline constexpr redis_atom redis_atom_v{};
using ready_atom = caf::atom_constant<caf::atom("ready")>;           ///< a transport came up
inline constexpr ready_atom ready_atom_v{};
using hello_atom = caf::atom_constant<caf::atom("hello")>;           ///< (hello_atom, node id)
inline constexpr hello_atom hello_atom_v{};
using challenge_atom = caf::atom_constant<caf::atom("challenge")>;   ///< (challenge_atom, nonce)
inline constexpr challenge_atom challenge_atom_v{};
using prove_atom = caf::atom_constant<caf::atom("prove")>;           ///< (prove_atom, node id, proof)
inline constexpr prove_atom prove_atom_v{};
using welcome_atom = caf::atom_constant<caf::atom("welcome")>;       ///< the peer accepted the proof
inline constexpr welcome_atom welcome_atom_v{};
using beat_atom = caf::atom_constant<caf::atom("beat")>;             ///< time for the bridge's heartbeat
inline constexpr beat_atom beat_atom_v{};
using fill_atom = caf::atom_constant<caf::atom("fill")>;             ///< (fill_atom, timer): the bridge's coalesced gap fill is due
inline constexpr fill_atom fill_atom_v{};
using gap_atom = caf::atom_constant<caf::atom("gapevent")>;          ///< (gap_atom, committed_event, community state version, lost_at_ms): a stored event of a gap, from the gap filler
inline constexpr gap_atom gap_atom_v{};
/// (await_atom, committed_event), writer -> bridge: stored under a state version this pod does
/// not hold yet; held as an envelope naming that version is, then handed to the fan-out
using await_atom = caf::atom_constant<caf::atom("await")>;
inline constexpr await_atom await_atom_v{};
using unfilled_atom = caf::atom_constant<caf::atom("unfilled")>;     ///< (unfilled_atom, lost_at_ms): the gap filler's Postgres did not answer
inline constexpr unfilled_atom unfilled_atom_v{};

// -- session -> community directory -------------------------------------------------------------
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;     ///< (lookup_atom, host, lookup_callback)
inline constexpr lookup_atom lookup_atom_v{};

// -- housekeeping -------------------------------------------------------------------------------
using flush_atom = caf::atom_constant<caf::atom("flush")>;
inline constexpr flush_atom flush_atom_v{};
using tick_atom = caf::atom_constant<caf::atom("tick")>;
inline constexpr tick_atom tick_atom_v{};
using purge_atom = caf::atom_constant<caf::atom("purge")>; ///< a writer's next chunk of expired events
inline constexpr purge_atom purge_atom_v{};
/// To a connection: the REQs waiting for its AUTH since timer `round` have waited long enough.
using auth_wait_atom = caf::atom_constant<caf::atom("authwait")>; ///< (auth_wait_atom, round)
inline constexpr auth_wait_atom auth_wait_atom_v{};
/// To a connection holding a query back: a storage reader ended one (reader_waits).
using resume_atom = caf::atom_constant<caf::atom("resume")>;
inline constexpr resume_atom resume_atom_v{};
/// To a connection whose query replies wait for its pod to catch up: look again.
using state_check_atom = caf::atom_constant<caf::atom("statecheck")>;
inline constexpr state_check_atom state_check_atom_v{};
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
inline constexpr shutdown_atom shutdown_atom_v{};
/// The pod is stopping: a connection closes once everything it was asked is answered; the
/// bridge answers it once everything sent to it before has gone to its transports.
using drain_atom = caf::atom_constant<caf::atom("drain")>;
inline constexpr drain_atom drain_atom_v{};

/// An event that was accepted in a community: committed to storage, or ephemeral.
struct committed_event {
  std::int64_t community_id = 0;
  live_event event;
  /// The community's state version read right after the event committed
  /// (store_outcome::state_version): no pod delivers it before holding that version, so a
  /// reader removed before it was stored never gets it live. 0: not stored (ephemeral), or not
  /// known; then the cache version of the pod that accepted it stands in.
  std::int64_t stored_version = 0;
};

/// A storage writer's committed batch, in commit order.
using committed_events = std::vector<committed_event>;

using frame_sink_ptr = std::shared_ptr<frame_sink>;

/// Where a storage writer answers an event: it queues the OK on the connection's socket itself
/// (one hop instead of two through the connection actor, which would only have forwarded it) and
/// counts it in `answered`, which the connection reads back for its bound on events in flight.
/// A connection sends all its events to one writer, so its OKs keep the order of its events.
struct ok_route {
  frame_sink_ptr sink;
  std::shared_ptr<std::atomic<std::size_t>> answered;
  std::string event_id_hex;
  /// What the event weighs in the pod's bound on events waiting for the writers
  /// (storage_waiting_weight); the writer gives it back once the OK is queued.
  std::int64_t weight = 0;
  /// The same weight in its client address's share, given back as the route goes.
  std::shared_ptr<const address_storage_hold> address_share = nullptr;
};

/// Events sent to the pod's writers and not answered yet, by storage_waiting_weight: each
/// connection has at most COMB_MAX_EVENTS_IN_FLIGHT waiting, but many connections sending large
/// events that are slow to store (thousands of tags each) would fill memory in front of a writer.
inline constexpr std::int64_t max_storage_waiting_bytes = 256 * 1024 * 1024;

/// An event on its way to a writer: its JSON and the event parsed (which may be far larger:
/// every tag string has one of its own).
[[nodiscard]] inline std::int64_t storage_waiting_weight(const std::string& json,
                                                         const protocol::event& ev) noexcept {
  return static_cast<std::int64_t>(json.size() + protocol::parsed_bytes(ev)) + 512;
}

/// What one connection's history replies hold on their way to its client: chunks a storage
/// reader has sent and the connection actor has not yet handed to its socket (`in_mailbox`,
/// bytes), then the socket's queue. A reader waits before sending another chunk while the two
/// would pass the history budget, so however large a reply, the relay holds about that much.
struct history_flow {
  std::atomic<std::size_t> in_mailbox{0};
  frame_sink_ptr sink; ///< may be null (tests): then only `in_mailbox` counts
  /// The client address, charged the database time its queries take (ip_budget::
  /// charge_database); null: not charged (tests).
  std::shared_ptr<ip_budget> address;

  [[nodiscard]] std::size_t held() const {
    return in_mailbox.load(std::memory_order_acquire) + (sink ? sink->queued_bytes() : 0);
  }
};

using history_flow_ptr = std::shared_ptr<history_flow>;

/// A REQ's or COUNT's history part, addressed to a storage reader.
/// Set when a query's subscription ends before its history reply did (history_request::ended).
using query_end_ptr = std::shared_ptr<std::atomic<bool>>;

struct history_request {
  caf::actor reply_to;
  std::int64_t community_id = 0;
  std::string subscription_id;
  std::uint64_t generation = 0;
  std::vector<protocol::filter> filters;
  history_flow_ptr flow; ///< null: the reply is not paced (tests); a COUNT only reads its sink
  /// What of the rooms the reader may not see: a COUNT's, or a REQ's that may match comments
  /// (storage::bounded_history_sql).
  protocol::room_hiding hidden;
  /// Set once its subscription is closed, replaced or refused: the reader stops reading for it.
  query_end_ptr ended = nullptr;
};

/// A REQ's live part, addressed to the fan-out.
struct live_request {
  caf::actor connection;
  std::uint64_t owner = 0;
  std::int64_t community_id = 0;
  std::string subscription_id;
  std::uint64_t generation = 0;
  std::vector<protocol::filter> filters;
  history_flow_ptr flow; ///< handed on to the history request
  /// The storage reader the connection picked, counted queued there at once (reader_waits);
  /// none: the fan-out picks one.
  caf::actor reader;
  /// Handed on to the history request (history_request::hidden).
  protocol::room_hiding hidden = {};
  query_end_ptr ended = nullptr; ///< handed on to the history request
};

/// A minted invite as the connection sends it: the relay-signed 28935, or why there is none.
struct invite_reply {
  std::shared_ptr<const std::string> event_json;
  std::string refusal; ///< full CLOSED text when event_json is null
};

using pubkey_list = std::vector<protocol::bytes32>;

using subscription_matches = std::vector<matched_subscription>;

/// One connection's share of a fan-out turn: the live events it gets, in publish order, and the
/// subscriptions each matched (`event` indexes `events`; in order). One message per connection
/// per turn instead of one per (event, connection): CAF's cost per message was a large part of
/// a delivery. Room for one event and one match inside the message: a turn mostly carries one
/// event per connection where the pod keeps up, and two vectors allocated per connection per turn
/// were most of the fan-out's allocations.
struct live_batch {
  struct match {
    std::uint32_t event = 0;
    matched_subscription subscription;
  };
  boost::container::small_vector<live_event, 1> events;
  boost::container::small_vector<match, 1> matches;
};

/// A batch of room requests' transaction, and the community's state read right after it
/// committed (the rooms a connection checks come from there), when it changed anything.
struct room_applied {
  storage::room_batch_write batch;
  std::optional<storage::community_access> access;
};

} // namespace comb::actors

// Local-only payloads: they never cross a process boundary (the bridge has its own envelope).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::committed_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::committed_events)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::live_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::history_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::live_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::frame_sink_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::ok_route)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::event_write)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::query_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::count_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::membership_command)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<comb::storage::membership_command>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::membership_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::membership_write)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::community_access)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::invite_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::waiting_place_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::pubkey_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::subscription_matches)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::live_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::storage::room_command)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<comb::storage::room_command>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::room_applied)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::protocol::room_outcome)
