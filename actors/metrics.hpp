// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "protocol/nip86.hpp"
#include "protocol/room_rules.hpp"
#include "storage/membership.hpp"

namespace comb::actors {

/// A Prometheus histogram of durations with fixed buckets (seconds), lock-free.
class latency_histogram {
public:
  static constexpr std::array<double, 12> bounds{0.001, 0.002, 0.005, 0.01, 0.025, 0.05,
                                                 0.1,   0.25,  0.5,   1.0,  2.5,   5.0};

  void observe(double seconds) noexcept;

  /// `name_bucket{le=...}`, `name_sum` and `name_count` lines.
  void render(std::string& out, const char* name, const char* help) const;

private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> micros_sum_{0};
};

/// Membership writes by write path and outcome (storage::membership_change x outcome).
inline constexpr std::size_t membership_paths = storage::membership_change_count;
inline constexpr std::size_t membership_outcomes = storage::membership_outcome_count;
inline constexpr std::size_t room_outcomes = static_cast<std::size_t>(protocol::room_outcome::failed) + 1;

/// NIP-86 calls by method (the last row: a method comb does not serve, or none) and outcome.
enum class management_outcome { ok, error, unauthorized, forbidden, failed };
inline constexpr std::size_t management_outcomes = 5;
inline constexpr std::size_t management_methods = protocol::management_method_count + 1;

/// Process-wide counters, written from any thread with relaxed atomics and rendered as
/// Prometheus text on /metrics.
struct relay_metrics {
  std::atomic<std::int64_t> connections_current{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> access_notifications{0}; ///< LISTEN notifications received
  std::atomic<std::uint64_t> access_reloads{0};       ///< community states reloaded from Postgres
  std::atomic<std::uint64_t> access_reloads_deferred{0}; ///< reloads held back (access_watcher_args::min_reload_interval)
  std::atomic<std::uint64_t> access_rewinds{0};       ///< reloads because the database's version went back
  /// How far the database's clock is ahead of the pod's, in ms (the access watcher measures it).
  std::atomic<std::int64_t> database_clock_offset_ms{0};
  std::atomic<bool> database_clock_known{false}; ///< measured at least once
  /// database_clock_offset_ms once measured; nothing before.
  [[nodiscard]] std::optional<std::int64_t> database_clock_ahead_ms() const {
    if (!database_clock_known.load(std::memory_order_relaxed))
      return std::nullopt;
    return database_clock_offset_ms.load(std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> access_events_delivered{0}; ///< events of access changes read back
  std::atomic<std::uint64_t> messages_event{0};
  std::atomic<std::uint64_t> messages_req{0};
  std::atomic<std::uint64_t> messages_count{0};
  std::atomic<std::uint64_t> messages_close{0};
  std::atomic<std::uint64_t> messages_auth{0};
  std::atomic<std::uint64_t> messages_invalid{0};
  std::atomic<std::uint64_t> events_accepted{0};
  std::atomic<std::uint64_t> events_rejected{0};
  std::atomic<std::uint64_t> events_stored{0};
  std::atomic<std::uint64_t> events_duplicate{0};
  std::atomic<std::uint64_t> vanish_requests{0};
  std::atomic<std::uint64_t> vanish_other_communities{0};
  std::atomic<std::uint64_t> events_failed{0};
  std::atomic<std::uint64_t> deliveries{0};
  std::atomic<std::uint64_t> fanout_filters_checked{0};
  std::atomic<std::uint64_t> slow_reader_disconnects{0};
  std::atomic<std::uint64_t> stalled_reader_disconnects{0};
  std::atomic<std::uint64_t> direct_writes{0}; ///< frames written by the thread that queued them
  std::atomic<std::uint64_t> oversize_disconnects{0};
  std::atomic<std::uint64_t> io_handler_exceptions{0};
  std::atomic<std::uint64_t> connection_failures{0};
  std::atomic<std::uint64_t> metrics_connections_refused{0};
  std::atomic<std::uint64_t> metrics_requests_misdirected{0}; ///< a public Host (DNS rebinding)
  std::atomic<std::uint64_t> partial_message_disconnects{0};
  /// Bytes read from every connection and not yet handled by its actor (gauge).
  std::atomic<std::size_t> inbound_frame_bytes{0};
  std::atomic<std::uint64_t> inbound_pod_pauses{0};
  std::atomic<std::uint64_t> write_batches{0};
  std::atomic<std::uint64_t> bridge_published{0};
  std::atomic<std::uint64_t> bridge_received{0};
  std::atomic<std::uint64_t> bridge_rejected{0};
  std::atomic<std::uint64_t> bridge_withheld{0};
  std::atomic<std::uint64_t> bridge_refused_peers{0};
  std::atomic<std::int64_t> cluster_peers_linked{0};
  std::atomic<std::uint64_t> bridge_unauthenticated{0};
  std::atomic<std::uint64_t> bridge_stale{0};
  std::atomic<std::uint64_t> bridge_replays{0};
  std::atomic<std::uint64_t> bridge_namesakes{0};
  std::atomic<std::uint64_t> bridge_floor_raised{0};
  std::atomic<std::uint64_t> bridge_held{0};
  std::atomic<std::uint64_t> events_awaited{0};
  std::atomic<std::uint64_t> replies_awaited{0};
  std::atomic<std::uint64_t> replies_awaited_too_long{0};
  std::atomic<std::uint64_t> deletions_not_kept{0};
  std::atomic<std::uint64_t> bridge_hold_dropped{0};
  std::atomic<std::int64_t> bridge_holding{0};
  std::atomic<std::uint64_t> cluster_dropped_messages{0};
  std::atomic<std::uint64_t> bridge_inbound_dropped{0};
  std::atomic<std::uint64_t> bridge_sequence_gaps{0};
  std::atomic<std::uint64_t> bridge_gap_fills{0};
  std::atomic<std::uint64_t> bridge_gap_fill_events{0};
  std::atomic<std::uint64_t> bridge_gap_fill_bytes{0};
  std::atomic<std::uint64_t> bridge_gap_fills_cut{0};
  std::atomic<std::uint64_t> bridge_fill_retries{0};
  std::atomic<std::uint64_t> bridge_quiet_fills{0};
  std::atomic<std::uint64_t> list_writes{0};
  std::array<std::array<std::atomic<std::uint64_t>, membership_outcomes>, membership_paths>
    membership_writes{};
  std::array<std::array<std::atomic<std::uint64_t>, management_outcomes>, management_methods>
    management_calls{};
  // -- bounds on what clients can make the pod hold or do (docs/operations.md, "Bounds") --
  std::atomic<std::int64_t> sockets_open{0}; ///< from accept to close, upgraded or not
  std::atomic<std::int64_t> outbound_bytes{0}; ///< queued for every connection, not yet written
  std::atomic<std::int64_t> fanout_filters_held{0};       ///< pod_filter_holdings
  std::atomic<std::int64_t> fanout_filter_values_held{0}; ///< pod_filter_holdings
  std::atomic<std::int64_t> storage_waiting_bytes{0}; ///< events sent to the writers, not yet answered (storage_waiting_weight)
  std::atomic<std::uint64_t> events_refused_storage_busy{0}; ///< past max_storage_waiting_bytes
  std::atomic<std::uint64_t> events_refused_address_storage{0}; ///< past max_storage_bytes_per_address
  std::atomic<std::uint64_t> database_ms_charged{0}; ///< query time charged to client addresses
  std::atomic<std::uint64_t> queries_refused_address_debt{0}; ///< queued while their address ran into debt
  /// Relay-signed lists and room states dropped from a socket's queue for a newer one.
  std::atomic<std::uint64_t> superseded_frames_dropped{0};
  /// Room requests the pod's cache of roles refused before they took a place in the room queue.
  std::atomic<std::uint64_t> room_requests_refused_early{0};
  std::atomic<std::uint64_t> store_requests_rate_limited{0}; ///< membership and room requests, per address
  std::atomic<std::uint64_t> connections_refused_busy{0};    ///< pod-wide socket cap (503)
  std::atomic<std::uint64_t> pings_refused{0};  ///< connections cut for pinging past their own ping bucket
  std::atomic<std::uint64_t> refusals_unanswered{0};  ///< refused sockets closed without a status (too many answered at once)
  std::atomic<std::uint64_t> connections_refused_address{0}; ///< per-address socket cap (429)
  std::atomic<std::uint64_t> http_too_large{0};      ///< headers (431) or body (413) over the bound
  std::atomic<std::uint64_t> http_rate_limited{0};   ///< per-address request bucket (429)
  std::atomic<std::uint64_t> upgrade_timeouts{0};    ///< request or handshake not done in time
  std::atomic<std::uint64_t> accept_backoffs{0};     ///< accept paused: out of descriptors
  std::atomic<std::uint64_t> frames_rate_limited{0}; ///< frames refused by a token bucket
  std::atomic<std::uint64_t> queries_refused{0};     ///< REQ/COUNT refused: caps and budgets
  std::atomic<std::uint64_t> queries_waited{0};      ///< REQ/COUNT that waited for a place
  std::atomic<std::uint64_t> queries_awaited_auth{0}; ///< REQs sent before AUTH that waited for it
  std::atomic<std::uint64_t> eoses_resent_after_auth{0}; ///< eoses_during_auth
  std::atomic<std::uint64_t> joins_awaited_auth{0}; ///< join requests sent before AUTH that waited for it
  std::atomic<std::int64_t> addresses_tracked{0};    ///< client addresses in the per-address table
  std::atomic<std::uint64_t> host_lookups{0};        ///< host lookups that asked the database
  std::atomic<std::uint64_t> host_lookups_refused{0}; ///< answered 503 at once: too many waiting
  std::atomic<std::uint64_t> host_lookups_stale{0}; ///< too many waiting: a known host's last answer served
  std::atomic<std::uint64_t> management_calls_refused{0}; ///< NIP-86 calls answered 503 at once
  /// NIP-86 calls answered 401/403/413/415 by the socket edge, before they could wait.
  std::atomic<std::uint64_t> management_calls_refused_early{0};
  std::atomic<std::uint64_t> invites_purged{0};      ///< expired invites deleted
  std::atomic<std::uint64_t> history_chunks{0};      ///< history chunks sent before a reply's last
  std::atomic<std::uint64_t> history_waits{0};       ///< a reader waited for its client to read
  std::atomic<std::uint64_t> history_abandoned{0};   ///< replies ended: client gone or too slow
  std::atomic<std::uint64_t> live_events_dropped{0}; ///< past max_buffered_live before EOSE
  std::atomic<std::uint64_t> lists_ahead_of_clock{0}; ///< member lists written after one far ahead of this pod's clock
  std::atomic<std::uint64_t> live_events_expired{0}; ///< reached the fan-out past their NIP-40 expiration
  std::atomic<std::uint64_t> queries_skipped{0};     ///< queries a reader dropped: their client had gone
  std::atomic<std::uint64_t> history_refused_busy{0}; ///< replies ended: every wait slot was taken
  std::atomic<std::uint64_t> history_too_long{0}; ///< replies ended: reading them took past their deadline
  std::atomic<std::uint64_t> deletions_refused{0};   ///< kind 5 naming too many targets
  /// NIP-29 room requests by outcome (protocol::room_outcome), and room events withheld from a
  /// reader by the room's flags.
  std::array<std::atomic<std::uint64_t>, room_outcomes> room_writes{};
  std::atomic<std::uint64_t> room_events_withheld{0};
  latency_histogram req_latency;
  latency_histogram commit_latency;
  latency_histogram membership_latency;
  /// More lines computed at scrape time (Redis link counters, members per community).
  std::function<std::string()> scrape_extras;

  /// Prometheus text exposition format.
  [[nodiscard]] std::string render() const;
};

/// Adds one, relaxed; the counters need no ordering with anything else.
template <class T>
inline void bump(std::atomic<T>& counter, T by = 1) noexcept {
  counter.fetch_add(by, std::memory_order_relaxed);
}

} // namespace comb::actors
