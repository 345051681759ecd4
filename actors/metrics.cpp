// SPDX-License-Identifier: MIT
#include "actors/metrics.hpp"

#include "storage/pg_timeouts.hpp"

#include <sstream>

namespace comb::actors {
namespace {

template <class T>
void write(std::ostringstream& out, const char* name, const char* type, const char* help,
           const std::atomic<T>& value, const char* labels = "") {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << labels << ' ' << value.load(std::memory_order_relaxed) << '\n';
}

void write_labelled(std::ostringstream& out, const char* name, const char* labels,
                    std::uint64_t value) {
  out << name << labels << ' ' << value << '\n';
}

} // namespace

void latency_histogram::observe(double seconds) noexcept {
  std::size_t bucket = 0;
  while (bucket < bounds.size() && seconds > bounds[bucket])
    ++bucket;
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  micros_sum_.fetch_add(static_cast<std::uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

void latency_histogram::render(std::string& out, const char* name, const char* help) const {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    std::ostringstream le;
    if (i < bounds.size())
      le << bounds[i];
    else
      le << "+Inf";
    out += std::string(name) + "_bucket{le=\"" + le.str() + "\"} " + std::to_string(cumulative) + "\n";
  }
  std::ostringstream sum;
  sum << static_cast<double>(micros_sum_.load(std::memory_order_relaxed)) / 1e6;
  out += std::string(name) + "_sum " + sum.str() + "\n";
  out += std::string(name) + "_count " + std::to_string(cumulative) + "\n";
}

std::string relay_metrics::render() const {
  std::ostringstream out;
  write(out, "comb_connections", "gauge", "Open WebSocket connections.", connections_current);
  write(out, "comb_connections_total", "counter", "WebSocket connections accepted.", connections_total);
  write(out, "comb_connections_refused_total", "counter", "Upgrades refused (limit, host, archived).", connections_refused);
  out << "# HELP comb_messages_total Client messages by type.\n# TYPE comb_messages_total counter\n";
  write_labelled(out, "comb_messages_total", "{type=\"EVENT\"}", messages_event.load());
  write_labelled(out, "comb_messages_total", "{type=\"REQ\"}", messages_req.load());
  write_labelled(out, "comb_messages_total", "{type=\"COUNT\"}", messages_count.load());
  write_labelled(out, "comb_messages_total", "{type=\"CLOSE\"}", messages_close.load());
  write_labelled(out, "comb_messages_total", "{type=\"AUTH\"}", messages_auth.load());
  write_labelled(out, "comb_messages_total", "{type=\"invalid\"}", messages_invalid.load());
  write(out, "comb_events_accepted_total", "counter", "Events that passed every check.", events_accepted);
  write(out, "comb_events_rejected_total", "counter", "Events refused before storage.", events_rejected);
  write(out, "comb_events_stored_total", "counter", "Events committed to Postgres.", events_stored);
  write(out, "comb_events_duplicate_total", "counter", "Events already stored or superseded.", events_duplicate);
  write(out, "comb_vanish_requests_total", "counter", "NIP-62 requests to vanish carried out.", vanish_requests);
  write(out, "comb_vanish_other_communities_total", "counter",
        "Communities a request to vanish was carried out in besides the one it was sent to.", vanish_other_communities);
  write(out, "comb_events_store_failed_total", "counter", "Events the database could not store.", events_failed);
  write(out, "comb_database_lock_timeouts_total", "counter",
        "Statements that waited past the lock timeout (10 s) for a lock another session held.",
        storage::pg_timeouts().lock);
  write(out, "comb_database_statement_timeouts_total", "counter",
        "Statements the database cancelled past the statement timeout (COMB_STATEMENT_TIMEOUT_MS).",
        storage::pg_timeouts().statement);
  write(out, "comb_fanout_deliveries_total", "counter", "Live events delivered to subscriptions.", deliveries);
  write(out, "comb_fanout_filters_checked_total", "counter",
        "Subscription filters checked against live events (each at most once per event).",
        fanout_filters_checked);
  write(out, "comb_slow_reader_disconnects_total", "counter", "Connections cut for unread output.", slow_reader_disconnects);
  write(out, "comb_stalled_reader_disconnects_total", "counter", "Connections cut for a socket that took no byte for the idle timeout while output waited.", stalled_reader_disconnects);
  write(out, "comb_direct_writes_total", "counter", "Writes made by the thread that queued the frames, the socket's writer being idle.", direct_writes);
  write(out, "comb_oversize_disconnects_total", "counter", "Connections cut for an oversize frame.", oversize_disconnects);
  write(out, "comb_io_handler_exceptions_total", "counter", "Exceptions that escaped a socket operation: the operation was dropped, the pod ran on (each is a fault to report).", io_handler_exceptions);
  write(out, "comb_connection_failures_total", "counter", "Connections closed (1011) because their actor failed: a bug, logged with its error.", connection_failures);
  write(out, "comb_metrics_connections_refused_total", "counter", "Connections to the metrics listener closed unread: 64 were being served.", metrics_connections_refused);
  write(out, "comb_metrics_requests_misdirected_total", "counter", "Requests to the metrics listener refused 421: their Host was a public name not in COMB_METRICS_HOSTS.", metrics_requests_misdirected);
  write(out, "comb_partial_message_disconnects_total", "counter", "Connections cut because the pod held too many bytes of unfinished messages.", partial_message_disconnects);
  write(out, "comb_inbound_frame_bytes", "gauge", "Bytes of messages read from every connection and not yet handled by its actor.", inbound_frame_bytes);
  write(out, "comb_inbound_pod_pauses_total", "counter", "Times a connection stopped reading because the pod held COMB_MAX_POD_INBOUND_BYTES of messages not yet handled.", inbound_pod_pauses);
  write(out, "comb_write_batches_total", "counter", "Group-commit transactions.", write_batches);
  write(out, "comb_bridge_published_total", "counter", "Events sent to other pods.", bridge_published);
  write(out, "comb_access_notifications_total", "counter", "Access-change notifications received from Postgres.", access_notifications);
  write(out, "comb_access_reloads_total", "counter", "Community states reloaded from Postgres.", access_reloads);
  write(out, "comb_access_reloads_deferred_total", "counter",
        "Reloads of a community's state held back to at most one per 100 ms; each is taken at the end.",
        access_reloads_deferred);
  write(out, "comb_database_clock_offset_ms", "gauge", "How far the database's clock is ahead of this pod's (negative: behind), measured every 10 s; past 30 s either way the pod logs an error.", database_clock_offset_ms);
  write(out, "comb_access_rewinds_total", "counter", "Community states taken again because the database's state version went back (a restore, a failover).", access_rewinds);
  write(out, "comb_access_events_delivered_total", "counter", "Events written by access changes, read back by version and given to the local fan-out.", access_events_delivered);
  write(out, "comb_bridge_received_total", "counter", "Events received from other pods.", bridge_received);
  write(out, "comb_bridge_rejected_total", "counter", "Envelopes from other pods that failed checks.", bridge_rejected);
  write(out, "comb_bridge_withheld_total", "counter",
        "Ephemeral events from other pods withheld: their author is not a member of the closed community here.",
        bridge_withheld);
  write(out, "comb_cluster_peers_linked", "gauge", "CAF cluster peers that accepted this pod.", cluster_peers_linked);
  write(out, "comb_bridge_refused_peers_total", "counter", "Cluster peers or messages refused for lack of the secret.", bridge_refused_peers);
  write(out, "comb_bridge_unauthenticated_total", "counter", "Envelopes dropped for a missing or wrong MAC (Redis or cluster links).", bridge_unauthenticated);
  write(out, "comb_bridge_stale_total", "counter", "Envelopes with a valid MAC dropped for a send time over a minute from this pod's clock (a replay, or clocks apart).", bridge_stale);
  write(out, "comb_bridge_namesake_envelopes_total", "counter", "Envelopes from another pod running under this pod's node id (COMB_NODE_ID set alike on several pods); taken, and logged once a minute.", bridge_namesakes);
  write(out, "comb_bridge_replays_total", "counter", "Envelopes with a valid MAC dropped as replays: sent before this pod started, at or below the replay floor, or already received.", bridge_replays);
  write(out, "comb_bridge_replay_floor_raised_total", "counter", "Times the replay memory was full and forgot an envelope younger than the skew window, raising the floor of accepted send times.", bridge_floor_raised);
  write(out, "comb_bridge_held_total", "counter", "Bridged events held until this pod reached the community state version their origin had.", bridge_held);
  write(out, "comb_deletions_not_kept_total", "counter", "Deletions (kind 5) carried out but neither stored nor served: they name events this community does not hold.", deletions_not_kept);
  write(out, "comb_events_awaited_total", "counter", "Events this pod stored whose commit read a newer community state version than the pod held: held like bridged events before local delivery.", events_awaited);
  write(out, "comb_replies_awaited_total", "counter", "REQ history chunks and COUNT answers held until this pod had the community state version they were read at (their rows are checked against it), or behind one that was.", replies_awaited);
  write(out, "comb_replies_awaited_too_long_total", "counter", "Held REQ history chunks and COUNT answers whose pod did not reach their state version within 5 s: refused with CLOSED, not sent.", replies_awaited_too_long);
  write(out, "comb_bridge_hold_dropped_total", "counter", "Held bridged events dropped: the pod did not reach their version within 5 s, or the hold was full.", bridge_hold_dropped);
  write(out, "comb_bridge_holding", "gauge", "Bridged events held now.", bridge_holding);
  write(out, "comb_cluster_dropped_messages_total", "counter", "Messages on the cluster port that are neither handshake nor envelope (dropped unread).", cluster_dropped_messages);
  write(out, "comb_bridge_inbound_dropped_total", "counter", "Envelopes from Redis or cluster peers, and cluster handshake messages, dropped unread because 10,000 messages or 256 MiB already waited for the bridge or the cluster port (a flood).", bridge_inbound_dropped);
  write(out, "comb_bridge_sequence_gaps_total", "counter", "Times another pod's envelope numbers showed envelopes of it that never came (its Redis link was down, a publish was shed, a link dropped): each starts a fill from Postgres.", bridge_sequence_gaps);
  write(out, "comb_bridge_gap_fills_total", "counter", "Fills of missed events from Postgres to the local fan-out (after a Redis or cluster link loss, or a gap in another pod's numbers), coalesced to one a second.", bridge_gap_fills);
  write(out, "comb_bridge_gap_fill_events_total", "counter", "Stored events the fills handed to the local fan-out (which drops those it delivered already).", bridge_gap_fill_events);
  write(out, "comb_bridge_gap_fill_bytes_total", "counter", "Bytes of event JSON the fills read from Postgres.", bridge_gap_fill_bytes);
  write(out, "comb_bridge_gap_fills_cut_total", "counter", "Fills that met their bound (1,000 events per community, 64 MiB in all) and left older events to REQs.", bridge_gap_fills_cut);
  write(out, "comb_bridge_fill_retries_total", "counter", "Gap fills asked again because one did not bring what it should: Postgres did not answer it, or bridged events expired in the hold or did not fit. Each waits twice the last, from 1 s to 64 s.", bridge_fill_retries);
  write(out, "comb_bridge_quiet_fills_total", "counter", "Fills asked because another pod went silent (no heartbeat for 6 s, then at 20 s, 1 min, 3 min and 10 min of silence, each from the mark before): a pod that died while cut off from the transports never shows its gap otherwise.", bridge_quiet_fills);
  write(out, "comb_list_writes_total", "counter", "NIP-43 member lists written.", list_writes);
  write(out, "comb_sockets_open", "gauge", "Sockets counted against the pod cap, from accept to close (refused sockets are not).", sockets_open);
  write(out, "comb_fanout_filters_held", "gauge", "Filters the open subscriptions of every connection hold in the fan-out (bounded by COMB_MAX_POD_FILTERS).", fanout_filters_held);
  write(out, "comb_fanout_filter_values_held", "gauge", "Their ids, authors, kinds and tag values (bounded by COMB_MAX_POD_FILTER_VALUES).", fanout_filter_values_held);
  write(out, "comb_outbound_bytes", "gauge", "Bytes queued for all connections, not yet written (each frame counted with what it holds beyond its payload, about 130 bytes).", outbound_bytes);
  write(out, "comb_storage_waiting_bytes", "gauge", "Events sent to the pod's writers and not yet answered, weighed as twice their JSON.", storage_waiting_bytes);
  write(out, "comb_database_ms_charged_total", "counter", "Milliseconds of REQ and COUNT statements charged to their client addresses' database buckets (COMB_IP_DATABASE_MS_RATE).", database_ms_charged);
  write(out, "comb_queries_refused_address_debt_total", "counter", "Queued REQs and COUNTs refused rate-limited: when a reader took them up, their client address owed more database time than its frame bucket holds.", queries_refused_address_debt);
  write(out, "comb_events_refused_address_storage_total", "counter", "Events refused rate-limited: because 32 MiB of events from the same client address already waited for the pod's writers.", events_refused_address_storage);
  write(out, "comb_events_refused_storage_busy_total", "counter", "Events refused rate-limited: because 256 MiB of events already waited for the pod's writers.", events_refused_storage_busy);
  write(out, "comb_superseded_frames_dropped_total", "counter", "Relay-signed lists and room states (13534, 33534, 39000-39005) dropped unwritten from a socket's queue because a newer one for the same subscription followed.", superseded_frames_dropped);
  write(out, "comb_room_requests_refused_early_total", "counter", "Room requests (9000-9010) refused at the connection: the pod's cache of roles says their author may not make them, or their event is over 64 KiB.", room_requests_refused_early);
  write(out, "comb_store_requests_rate_limited_total", "counter", "Membership and room requests refused before their transaction by the per-address request bucket (the one HTTP requests and upgrades draw on).", store_requests_rate_limited);
  write(out, "comb_connections_refused_busy_total", "counter", "Sockets and HTTP requests refused at a pod-wide cap (503): sockets, addresses, request bodies being read.", connections_refused_busy);
  write(out, "comb_pings_refused_total", "counter", "Connections cut for pinging past their own ping bucket.", pings_refused);
  write(out, "comb_refusals_unanswered_total", "counter", "Refused sockets closed without an HTTP status, past the number answered at once.", refusals_unanswered);
  write(out, "comb_connections_refused_address_total", "counter", "Sockets refused at the per-address cap (429).", connections_refused_address);
  write(out, "comb_http_too_large_total", "counter", "HTTP requests refused for headers (431) or a body (413) over the bound.", http_too_large);
  write(out, "comb_http_rate_limited_total", "counter", "HTTP requests and upgrades refused by the per-address bucket, and request bodies past the 16 one address may have on their way at once (429).", http_rate_limited);
  write(out, "comb_upgrade_timeouts_total", "counter", "Sockets closed for not finishing the request or upgrade in time.", upgrade_timeouts);
  write(out, "comb_accept_backoffs_total", "counter", "Accept pauses for lack of file descriptors.", accept_backoffs);
  write(out, "comb_frames_rate_limited_total", "counter", "Frames refused by the connection or address token bucket.", frames_rate_limited);
  write(out, "comb_queries_refused_total", "counter", "REQ and COUNT refused by subscription, filter or queue bounds.", queries_refused);
  write(out, "comb_queries_waited_total", "counter", "REQ and COUNT that waited for a query place in their connection or room at the storage readers.", queries_waited);
  write(out, "comb_queries_awaited_auth_total", "counter", "REQs that needed AUTH, sent before it, that waited for it rather than being refused at once.", queries_awaited_auth);
  write(out, "comb_eoses_resent_after_auth_total", "counter", "EOSEs sent again once a client sent its requests again after its AUTH's OK (welshman drops EOSEs while it authenticates).", eoses_resent_after_auth);
  write(out, "comb_joins_awaited_auth_total", "counter", "Join requests (28934) sent before AUTH that waited for it rather than being refused at once.", joins_awaited_auth);
  write(out, "comb_addresses_tracked", "gauge", "Client addresses held in the per-address table.", addresses_tracked);
  write(out, "comb_history_chunks_total", "counter", "History chunks sent before the last one of their reply (replies over a chunk).", history_chunks);
  write(out, "comb_history_waits_total", "counter", "Times a storage reader waited for a client to read history held at the byte budget.", history_waits);
  write(out, "comb_history_abandoned_total", "counter", "History replies ended early: the client left or read nothing for the statement timeout.", history_abandoned);
  write(out, "comb_member_lists_ahead_of_clock_total", "counter", "Membership changes written at once after a member list more than 5 s ahead of this pod's clock (a clock behind, or comb-admin run with a clock ahead), instead of waiting out the skew.", lists_ahead_of_clock);
  write(out, "comb_live_events_expired_total", "counter", "Live events that reached the fan-out after their NIP-40 expiration had passed (held by the bridge, or brought by a gap fill), not sent.", live_events_expired);
  write(out, "comb_live_events_dropped_total", "counter", "Live events dropped for a subscription still reading its history, past its bound of held events.", live_events_dropped);
  write(out, "comb_queries_skipped_total", "counter", "REQ and COUNT queries a reader dropped unread: their connection had closed.", queries_skipped);
  write(out, "comb_history_too_long_total", "counter", "History replies ended because reading them took longer than three statement timeouts.", history_too_long);
  write(out, "comb_history_refused_busy_total", "counter", "History replies ended because every storage reader that may wait for a slow client already did.", history_refused_busy);
  write(out, "comb_invites_purged_total", "counter", "Expired invites deleted.", invites_purged);
  write(out, "comb_deletions_refused_total", "counter", "Deletion requests (kind 5) naming more targets than allowed.", deletions_refused);
  write(out, "comb_host_lookups_total", "counter", "Host lookups that asked the database.", host_lookups);
  write(out, "comb_host_lookups_refused_total", "counter", "Requests for a host not cached, answered 503 at once: too many lookups were waiting.", host_lookups_refused);
  write(out, "comb_host_lookups_stale_total", "counter", "Requests for a known host whose answer had expired, served that answer because too many lookups were waiting.", host_lookups_stale);
  write(out, "comb_management_calls_refused_total", "counter", "NIP-86 calls answered 503 at once: too many calls were waiting on the management actor.", management_calls_refused);
  write(out, "comb_management_calls_refused_early_total", "counter", "NIP-86 calls refused before they could wait on the management actor: a bad shape or signature, or a signer this pod knows is no owner or admin.", management_calls_refused_early);
  out << "# HELP comb_membership_writes_total Membership commands by write path and outcome.\n"
         "# TYPE comb_membership_writes_total counter\n";
  for (std::size_t path = 0; path < membership_paths; ++path)
    for (std::size_t outcome = 0; outcome < membership_outcomes; ++outcome)
      if (auto n = membership_writes[path][outcome].load(std::memory_order_relaxed))
        out << "comb_membership_writes_total{path=\""
            << storage::change_name(static_cast<storage::membership_change>(path))
            << "\",outcome=\""
            << storage::outcome_name(static_cast<storage::membership_outcome>(outcome)) << "\"} "
            << n << '\n';
  out << "# HELP comb_room_writes_total NIP-29 room requests by outcome.\n"
         "# TYPE comb_room_writes_total counter\n";
  for (std::size_t outcome = 0; outcome < room_outcomes; ++outcome)
    if (auto n = room_writes[outcome].load(std::memory_order_relaxed))
      out << "comb_room_writes_total{outcome=\""
          << protocol::room_outcome_name(static_cast<protocol::room_outcome>(outcome)) << "\"} " << n
          << '\n';
  write(out, "comb_room_events_withheld_total", "counter", "Room events not sent to a reader the room's flags exclude.", room_events_withheld);
  out << "# HELP comb_management_calls_total NIP-86 calls by method and outcome.\n"
         "# TYPE comb_management_calls_total counter\n";
  constexpr const char* outcome_names[] = {"ok", "error", "unauthorized", "forbidden", "failed"};
  for (std::size_t method = 0; method < management_methods; ++method)
    for (std::size_t outcome = 0; outcome < management_outcomes; ++outcome)
      if (auto n = management_calls[method][outcome].load(std::memory_order_relaxed))
        out << "comb_management_calls_total{method=\""
            << (method < protocol::management_method_count
                  ? protocol::method_name(static_cast<protocol::management_method>(method))
                  : std::string_view("other"))
            << "\",outcome=\"" << outcome_names[outcome] << "\"} " << n << '\n';
  std::string text = out.str();
  req_latency.render(text, "comb_req_seconds", "REQ to EOSE.");
  commit_latency.render(text, "comb_commit_seconds", "Group-commit transaction time.");
  membership_latency.render(text, "comb_membership_commit_seconds", "Membership transaction round trip.");
  if (scrape_extras)
    text += scrape_extras();
  return text;
}

} // namespace comb::actors
