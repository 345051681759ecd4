// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <unordered_map>
#include <variant>

#include "actors/connection/connection.hpp"
#include "actors/connection/frame_ledger.hpp"
#include "actors/connection/replies_awaiting_state.hpp"
#include "actors/connection/reqs_awaiting_auth.hpp"
#include "actors/lazy_deque.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "actors/storage/reader_waits.hpp"
#include "actors/waiting_place.hpp"
#include "actors/connection/eoses_during_auth.hpp"
#include "protocol/client_message.hpp"

namespace comb::actors {

/// Everything a connection actor is given when its socket is accepted.
struct connection_args {
  connection_policy policy;
  std::string challenge;
  frame_sink_ptr sink;
  std::uint64_t owner = 0; ///< unique per pod; keys this connection in the fan-out
  caf::actor fanout;
  caf::actor writer;
  caf::actor community;         ///< this community's actor: membership requests
  caf::actor membership_writer; ///< mints invites (NIP-43 28935)
  caf::actor bridge;            ///< other pods (ephemeral events go there directly); may be unset
  std::vector<caf::actor> readers;
  std::shared_ptr<reader_waits> readers_waiting; ///< steers queries off waiting readers
  std::shared_ptr<relay_metrics> metrics;
  /// Invite REQs waiting on the membership writer over the pod (max_waiting_invites); none: unbounded (tests).
  std::shared_ptr<std::atomic<std::size_t>> invites_waiting;
  /// Bytes of frames the socket handed over and this actor has not finished; the socket stops
  /// reading while it is high, so a flood queues in the client's TCP window, not in our memory.
  std::shared_ptr<frame_ledger> frames_pending;
  /// How long a query reply waits for the pod to reach the state it was read at (tests shorten it).
  double state_wait_seconds = max_state_wait_seconds;
};

/// Invite REQs (28935) waiting on the pod's one membership writer, over every connection: it
/// also writes every community's joins, leaves and rooms, which must not queue behind a flood.
inline constexpr std::size_t max_waiting_invites = 64;

/// Join requests one connection may have waiting for its AUTH; more are refused at once.
inline constexpr std::size_t max_joins_awaiting_auth = 4;
/// A join waits for AUTH before its signature is checked, so only one of a real join's size
/// (a claim and a few tags) waits; a larger one is answered `auth-required:` at once.
inline constexpr std::size_t max_join_awaiting_auth_bytes = 16 * 1024;

struct connection_state {
  connection_args args;
  std::optional<connection> logic;
  std::uint64_t next_ticket = 1;
  /// OKs the storage writer has queued on the socket for this connection and the logic has not
  /// yet counted off its events in flight (the writer answers on the socket directly).
  std::shared_ptr<std::atomic<std::size_t>> events_answered = std::make_shared<std::atomic<std::size_t>>(0);
  /// Joins and leaves for the sender's own key are bounded apart (max_waiting_self_requests),
  /// the community's and its rooms' each.
  enum class own_lane : std::uint8_t { none, community, room };
  /// A membership or room request waiting for its outcome.
  struct awaiting_request {
    std::string id; ///< the event's id, hex
    std::uint32_t kind = 0;
    own_lane lane = own_lane::none;
  };
  /// Membership and room requests waiting for their outcome, by ticket.
  std::unordered_map<std::uint64_t, awaiting_request> awaiting_membership;
  /// REQs sent before AUTH that need it, waiting for it (auth_grace); `auth_wait` numbers the
  /// grace's timer, so one of an earlier wait is ignored.
  reqs_awaiting_auth awaiting_auth;
  /// EOSEs sent before welshman read the AUTH's OK, sent again when it shows it has.
  eoses_during_auth eoses_before_auth;
  std::uint64_t auth_wait = 0;
  bool auth_wait_extended = false; ///< the wait runs on to auth_grace_when_lost
  /// Join requests (28934) sent before AUTH, waiting for it as REQs do (auth_grace, the same
  /// timer): welshman sends a join at once and never again, and hides the `auth-required:`
  /// refusal, so Flotilla's visitor was never added. At most max_joins_awaiting_auth.
  std::vector<protocol::event> joins_awaiting_auth;
  /// A REQ that asked for an invite (28935), held until it is minted (its place among the
  /// pod's waiting mints travels with the mint message).
  struct awaiting_mint {
    protocol::req_message message;
    bool abandoned = false; ///< its subscription was closed or replaced: nothing is sent
  };
  /// By ticket.
  std::unordered_map<std::uint64_t, awaiting_mint> awaiting_invite;
  /// A subscription's history query not yet answered: when its REQ arrived (for the REQ-to-EOSE
  /// histogram), and what tells its reader to stop if the subscription ends first.
  struct query_under_way {
    double started = 0;
    query_end_ptr ended;
  };
  /// By subscription id; bounded as subscriptions are.
  std::unordered_map<std::string, query_under_way> queries_under_way;
  /// REQs (their live part, which starts their query) and COUNTs waiting for one of the
  /// policy's `max_queries_in_flight` places; bounded by the subscription cap and
  /// `max_waiting_counts`.
  lazy_deque<std::variant<live_request, history_request>> waiting_queries;
  std::size_t waiting_counts = 0;
  /// COUNTs at a reader, by ticket: each as it was sent, with how often it was counted again.
  struct count_in_flight {
    history_request request;
    int recounts = 0;
  };
  std::unordered_map<std::uint64_t, count_in_flight> counts_in_flight;
  std::uint64_t next_count = 1;
  bool echo_expiry_scheduled = false;
  /// In the pod's queue of connections waiting for room at the readers (reader_waits); shared
  /// with the actor's end, which must then leave that queue.
  std::shared_ptr<bool> waiting_for_room = std::make_shared<bool>(false);
  /// What this connection's history replies hold on their way out; readers pace by it.
  history_flow_ptr history;
  /// History chunks and COUNT answers read past the community state this pod holds.
  replies_awaiting_state awaiting_state{max_state_wait_seconds};
  bool state_check_scheduled = false;
  std::int64_t state_check_delay_ms = 0; ///< until the next look, growing while they wait
  static inline const char* name = "connection";
};

using connection_self = caf::stateful_actor<connection_state>*;

/// Shared by the actor's files: a frame for this connection's socket.
inline void send_frame(connection_self self, std::string frame) {
  self->state.args.sink->send(std::move(frame));
}

/// Shared by the actor's files: starts the REQs and COUNTs that wait while there are places.
/// Returns how many started.
std::size_t start_waiting_queries(connection_self self);

/// Shared by the actor's files: one chunk of a history reply, sent (or dropped) now.
void on_history(connection_self self, const std::string& sub, std::uint64_t generation,
                storage::query_result& result);

/// Shared by the actor's files: the storage reader a query goes to.
[[nodiscard]] const caf::actor& reader_for(connection_self self);

/// One per socket: parses frames, asks `connection` for every decision, talks to storage and
/// fan-out, and turns every outcome into exactly one OK, CLOSED, NOTICE, EOSE or COUNT.
caf::behavior connection_actor(caf::stateful_actor<connection_state>* self, connection_args args);

} // namespace comb::actors
