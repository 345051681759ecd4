// SPDX-License-Identifier: MIT
#include "conf/options.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

namespace comb::conf {
namespace {

template <class T>
using accessor = std::function<T&(relay_settings&)>;

option text(std::string key, std::string env, std::string help, accessor<std::string> field,
            bool secret = false) {
  return {std::move(key), std::move(env), std::move(help), secret,
          [field](relay_settings& s, std::string_view v) -> std::optional<std::string> {
            field(s) = std::string(v);
            return std::nullopt;
          },
          [field](const relay_settings& s) { return field(const_cast<relay_settings&>(s)); }};
}

option choice(std::string key, std::string env, std::string help, accessor<std::string> field,
              std::vector<std::string> allowed) {
  return {std::move(key), std::move(env), std::move(help), false,
          [field, allowed](relay_settings& s, std::string_view v) -> std::optional<std::string> {
            for (const auto& a : allowed)
              if (a == v) {
                field(s) = a;
                return std::nullopt;
              }
            std::string message = "must be one of:";
            for (const auto& a : allowed)
              message += " " + a;
            return message;
          },
          [field](const relay_settings& s) { return field(const_cast<relay_settings&>(s)); }};
}

template <class T>
option number(std::string key, std::string env, std::string help, accessor<T> field, T low,
              T high) {
  return {std::move(key), std::move(env), std::move(help), false,
          [field, low, high](relay_settings& s, std::string_view v) -> std::optional<std::string> {
            T value{};
            auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
            // A NaN passes both comparisons: a rate of `nan` would switch its limit off.
            bool finite = true;
            if constexpr (std::is_floating_point_v<T>)
              finite = std::isfinite(value);
            if (ec != std::errc() || end != v.data() + v.size() || !finite || value < low || value > high) {
              std::ostringstream message;
              message << "must be a number from " << low << " to " << high;
              return message.str();
            }
            field(s) = value;
            return std::nullopt;
          },
          [field](const relay_settings& s) {
            std::ostringstream out;
            out << field(const_cast<relay_settings&>(s));
            return out.str();
          }};
}

option flag(std::string key, std::string env, std::string help, accessor<bool> field) {
  return {std::move(key), std::move(env), std::move(help), false,
          [field](relay_settings& s, std::string_view v) -> std::optional<std::string> {
            if (v == "true" || v == "1" || v == "on" || v == "yes")
              field(s) = true;
            else if (v == "false" || v == "0" || v == "off" || v == "no")
              field(s) = false;
            else
              return "must be true or false";
            return std::nullopt;
          },
          [field](const relay_settings& s) {
            return field(const_cast<relay_settings&>(s)) ? std::string("true") : "false";
          }};
}

option list(std::string key, std::string env, std::string help,
            accessor<std::vector<std::string>> field) {
  return {std::move(key), std::move(env), std::move(help), false,
          [field](relay_settings& s, std::string_view v) -> std::optional<std::string> {
            auto& out = field(s);
            out.clear();
            std::string item;
            std::istringstream in{std::string(v)};
            while (std::getline(in, item, ','))
              if (!item.empty())
                out.push_back(item);
            return std::nullopt;
          },
          [field](const relay_settings& s) {
            std::string out;
            for (const auto& item : field(const_cast<relay_settings&>(s)))
              out += (out.empty() ? "" : ",") + item;
            return out;
          }};
}

constexpr std::size_t mib = 1024 * 1024;

std::vector<option> make_options() {
  using S = relay_settings;
  using sz = std::size_t;
  return {
    text("server.listen", "COMB_LISTEN", "host:port the relay listens on (a name: every address it resolves to)", [](S& s) -> auto& { return s.listen; }),
    text("server.public_url", "COMB_PUBLIC_URL", "URL clients type (same for every pod behind a load balancer); empty: ws:// + listen", [](S& s) -> auto& { return s.public_url; }),
    text("server.data_dir", "COMB_DATA_DIR", "data folder (relay key, private Postgres)", [](S& s) -> auto& { return s.data_dir; }),
    number<unsigned>("server.io_threads", "COMB_IO_THREADS", "threads running sockets (each its own; new sockets go to each in turn)", [](S& s) -> auto& { return s.io_threads; }, 1, 64),
    number<unsigned>("server.worker_threads", "COMB_WORKER_THREADS", "threads running actors (parsing, signatures, fan-out)", [](S& s) -> auto& { return s.worker_threads; }, 1, 64),
    text("server.name", "COMB_NAME", "NIP-11 name", [](S& s) -> auto& { return s.name; }),
    text("server.description", "COMB_DESCRIPTION", "NIP-11 description", [](S& s) -> auto& { return s.description; }),
    text("server.contact", "COMB_CONTACT", "NIP-11 contact", [](S& s) -> auto& { return s.contact; }),
    text("storage.database_url", "COMB_DATABASE_URL", "libpq URI; empty: the run command's private cluster", [](S& s) -> auto& { return s.database_url; }, true),
    number<unsigned>("storage.readers", "COMB_STORAGE_READERS", "Postgres connections serving REQ and COUNT", [](S& s) -> auto& { return s.storage_readers; }, 1, 64),
    number<unsigned>("storage.writers", "COMB_STORAGE_WRITERS", "Postgres connections storing events, each committing its own batches", [](S& s) -> auto& { return s.storage_writers; }, 1, 16),
    number<sz>("storage.write_batch_max", "COMB_WRITE_BATCH_MAX", "events committed in one transaction at most", [](S& s) -> auto& { return s.write_batch_max; }, 1, 10000),
    number<std::uint32_t>("storage.statement_timeout_ms", "COMB_STATEMENT_TIMEOUT_MS", "REQ and COUNT queries running longer are cancelled (Postgres statement_timeout on reader connections)", [](S& s) -> auto& { return s.statement_timeout_ms; }, 100, 3600000),
    text("cluster.redis_url", "COMB_REDIS_URL", "Redis for cross-pod delivery; empty: none", [](S& s) -> auto& { return s.redis_url; }, true),
    text("cluster.listen", "COMB_CLUSTER_LISTEN", "host:port for CAF cluster links; empty: none", [](S& s) -> auto& { return s.cluster_listen; }),
    list("cluster.peers", "COMB_CLUSTER_PEERS", "comma-separated host:port of other pods", [](S& s) -> auto& { return s.cluster_peers; }),
    text("cluster.secret", "COMB_CLUSTER_SECRET", "shared secret peers must prove", [](S& s) -> auto& { return s.cluster_secret; }, true),
    text("cluster.cert", "COMB_CLUSTER_CERT", "PEM certificate of this pod for mutual TLS on cluster links (comb-admin cluster issue)", [](S& s) -> auto& { return s.cluster_cert; }),
    text("cluster.key", "COMB_CLUSTER_KEY", "PEM private key of that certificate", [](S& s) -> auto& { return s.cluster_key; }),
    text("cluster.ca", "COMB_CLUSTER_CA", "PEM CA every peer's certificate must chain to; empty (with cert and key): cluster links only on loopback", [](S& s) -> auto& { return s.cluster_ca; }),
    text("cluster.node_id", "COMB_NODE_ID", "this pod's id; empty: random per start", [](S& s) -> auto& { return s.node_id; }),
    text("community.relay_key_file", "COMB_RELAY_KEY_FILE", "relay secret key file; empty: <data_dir>/relay.key", [](S& s) -> auto& { return s.relay_key_file; }),
    text("community.owner_pubkey", "COMB_OWNER_PUBKEY", "owner of the fresh-install community (hex or npub)", [](S& s) -> auto& { return s.owner_pubkey; }),
    choice("community.access", "COMB_ACCESS", "access of the fresh-install community when it is created", [](S& s) -> auto& { return s.access; }, {"open", "closed"}),
    number<sz>("limits.max_message_bytes", "COMB_MAX_MESSAGE_BYTES", "largest frame a client may send (bytes); larger closes the connection", [](S& s) -> auto& { return s.limits.max_message_bytes; }, 1024, 64 * mib),
    number<sz>("limits.max_subscriptions", "COMB_MAX_SUBSCRIPTIONS", "open subscriptions per connection", [](S& s) -> auto& { return s.limits.max_subscriptions_per_connection; }, 1, 100000),
    number<sz>("limits.max_filters", "COMB_MAX_FILTERS", "filters per REQ or COUNT", [](S& s) -> auto& { return s.limits.max_filters_per_req; }, 1, 1000),
    number<std::uint32_t>("limits.max_limit", "COMB_MAX_LIMIT", "largest history a filter returns (events)", [](S& s) -> auto& { return s.limits.max_limit; }, 1, 1000000),
    number<sz>("limits.max_event_tags", "COMB_MAX_EVENT_TAGS", "tags per event", [](S& s) -> auto& { return s.limits.max_tags_per_event; }, 1, 100000),
    number<sz>("limits.max_tag_elements", "COMB_MAX_TAG_ELEMENTS", "strings in all of an event's tags together", [](S& s) -> auto& { return s.limits.max_tag_elements_per_event; }, 1, 1000000),
    number<sz>("limits.max_content_bytes", "COMB_MAX_CONTENT_BYTES", "event content (bytes)", [](S& s) -> auto& { return s.limits.max_content_bytes; }, 1, 64 * mib),
    number<std::int64_t>("limits.max_seconds_ahead", "COMB_MAX_SECONDS_AHEAD", "how far created_at may be in the future (s)", [](S& s) -> auto& { return s.created_at.max_seconds_ahead; }, 1, 100LL * 365 * 86400),
    number<std::int64_t>("limits.max_seconds_behind", "COMB_MAX_SECONDS_BEHIND", "how far created_at may be in the past (s); 0: no bound", [](S& s) -> auto& { return s.created_at.max_seconds_behind; }, 0, 100LL * 365 * 86400),
    number<sz>("limits.max_connections", "COMB_MAX_CONNECTIONS", "open WebSocket connections per pod", [](S& s) -> auto& { return s.max_connections; }, 1, 1000000),
    number<sz>("limits.max_outbound_bytes", "COMB_MAX_OUTBOUND_BYTES", "bytes queued for one slow reader before it is cut", [](S& s) -> auto& { return s.max_outbound_bytes; }, 64 * 1024, 1024 * mib),
    number<sz>("limits.max_pod_outbound_bytes", "COMB_MAX_POD_OUTBOUND_BYTES", "bytes queued for all connections of the pod; past it, a reader holding something that would hold its share or more (this over max_connections, between 64 KiB and 1 MiB) is cut", [](S& s) -> auto& { return s.max_pod_outbound_bytes; }, mib, 1024 * 1024 * mib),
    number<sz>("limits.max_history_bytes", "COMB_MAX_HISTORY_BYTES", "bytes of history one connection holds on its way out (replies are streamed in chunks of a sixteenth of it); keep it under max_outbound_bytes", [](S& s) -> auto& { return s.max_history_bytes; }, 64 * 1024, 1024 * mib),
    number<sz>("limits.event_cache_bytes", "COMB_EVENT_CACHE_BYTES", "bytes of stored events' JSON the pod keeps in memory for history replies (Postgres still chooses every reply's events); 0: none", [](S& s) -> auto& { return s.event_cache_bytes; }, 0, 64 * 1024 * mib),
    number<sz>("limits.max_pod_partial_bytes", "COMB_MAX_POD_PARTIAL_BYTES", "bytes of messages begun and not finished (fragments, or a large message arriving), over all connections of the pod; a connection that would pass it is closed", [](S& s) -> auto& { return s.max_pod_partial_bytes; }, 64 * 1024, 1024 * 1024 * mib),
    number<sz>("limits.max_inbound_bytes", "COMB_MAX_INBOUND_BYTES", "bytes read from one connection and not yet handled; past it the socket is not read", [](S& s) -> auto& { return s.max_inbound_bytes; }, 64 * 1024, 1024 * mib),
    number<sz>("limits.max_pod_inbound_bytes", "COMB_MAX_POD_INBOUND_BYTES", "bytes read from all connections of the pod and not yet handled; past it no socket is read", [](S& s) -> auto& { return s.max_pod_inbound_bytes; }, mib, 1024 * 1024 * mib),
    number<double>("limits.event_rate", "COMB_EVENT_RATE", "events per second one connection may send, sustained", [](S& s) -> auto& { return s.event_rate; }, 0.01, 1e6),
    number<double>("limits.event_burst", "COMB_EVENT_BURST", "events one connection may send at once", [](S& s) -> auto& { return s.event_burst; }, 1, 1e6),
    number<sz>("limits.max_events_in_flight", "COMB_MAX_EVENTS_IN_FLIGHT", "events of one connection awaiting commit", [](S& s) -> auto& { return s.max_events_in_flight; }, 1, 100000),
    number<std::uint32_t>("limits.idle_timeout_seconds", "COMB_IDLE_TIMEOUT_SECONDS", "a silent peer is pinged, then dropped after this long", [](S& s) -> auto& { return s.idle_timeout_seconds; }, 5, 86400),
    number<double>("limits.frame_rate", "COMB_FRAME_RATE", "frame tokens per second one connection may use, sustained (a frame takes 1, plus 1 per 16 KiB)", [](S& s) -> auto& { return s.frame_rate; }, 0.01, 1e7),
    number<double>("limits.frame_burst", "COMB_FRAME_BURST", "frame tokens one connection may use at once", [](S& s) -> auto& { return s.frame_burst; }, 1, 1e7),
    number<double>("limits.auth_cost", "COMB_AUTH_COST", "extra frame tokens an AUTH (a SHA-256 and a Schnorr verification) or an invite REQ (28935, a database write) takes", [](S& s) -> auto& { return s.auth_cost; }, 0, 1e6),
    number<double>("limits.ip_frame_rate", "COMB_IP_FRAME_RATE", "frame tokens per second one client address may use over all its connections", [](S& s) -> auto& { return s.ip_frame_rate; }, 0.01, 1e8),
    number<double>("limits.ip_frame_burst", "COMB_IP_FRAME_BURST", "frame tokens one client address may use at once", [](S& s) -> auto& { return s.ip_frame_burst; }, 1, 1e8),
    number<double>("limits.ip_request_rate", "COMB_IP_REQUEST_RATE", "HTTP requests, WebSocket upgrades and membership or room requests per second per client address", [](S& s) -> auto& { return s.ip_request_rate; }, 0.01, 1e7),
    number<double>("limits.ip_database_ms_rate", "COMB_IP_DATABASE_MS_RATE", "milliseconds of the storage readers per second one client address's REQs and COUNTs may take (charged once run)", [](S& s) -> auto& { return s.ip_database_ms_rate; }, 0.01, 1e8),
    number<double>("limits.ip_database_ms_burst", "COMB_IP_DATABASE_MS_BURST", "the same at once; past it the address's queued queries are refused", [](S& s) -> auto& { return s.ip_database_ms_burst; }, 1, 1e9),
    number<double>("limits.ip_request_burst", "COMB_IP_REQUEST_BURST", "HTTP requests, upgrades and membership or room requests one client address may make at once", [](S& s) -> auto& { return s.ip_request_burst; }, 1, 1e7),
    number<sz>("limits.max_connections_per_ip", "COMB_MAX_CONNECTIONS_PER_IP", "sockets one client address may hold open, counted from accept", [](S& s) -> auto& { return s.max_connections_per_ip; }, 1, 1000000),
    number<sz>("limits.max_tracked_ips", "COMB_MAX_TRACKED_IPS", "client addresses the per-address bounds remember at once; past it new addresses get 503", [](S& s) -> auto& { return s.max_tracked_ips; }, 1000, 100000000),
    number<std::uint32_t>("limits.upgrade_timeout_seconds", "COMB_UPGRADE_TIMEOUT_SECONDS", "time from accept to a complete HTTP request or WebSocket upgrade", [](S& s) -> auto& { return s.upgrade_timeout_seconds; }, 1, 3600),
    number<sz>("limits.max_open_filters", "COMB_MAX_OPEN_FILTERS", "filters one connection's open subscriptions may hold, summed", [](S& s) -> auto& { return s.max_open_filters; }, 1, 1000000),
    number<sz>("limits.max_open_filter_values", "COMB_MAX_OPEN_FILTER_VALUES", "ids, authors, kinds and tag values one connection's subscriptions may hold, summed", [](S& s) -> auto& { return s.max_open_filter_values; }, 1, 100000000),
    number<sz>("limits.max_open_filter_bytes", "COMB_MAX_OPEN_FILTER_BYTES", "bytes of those values, summed (an id or author counts 32)", [](S& s) -> auto& { return s.max_open_filter_bytes; }, 1024, 1ULL << 32),
    number<sz>("limits.max_broad_filters", "COMB_MAX_BROAD_FILTERS", "open filters per connection with no ids, authors, kinds or tags (checked against every event)", [](S& s) -> auto& { return s.max_broad_filters; }, 0, 1000000),
    number<sz>("limits.max_broad_filters_per_ip", "COMB_MAX_BROAD_FILTERS_PER_IP", "the same, summed over the sockets of one client address", [](S& s) -> auto& { return s.max_broad_filters_per_ip; }, 0, 100000000),
    number<sz>("limits.max_filters_per_ip", "COMB_MAX_FILTERS_PER_IP", "open filters summed over the sockets of one client address (each is checked against every event of what it names)", [](S& s) -> auto& { return s.max_filters_per_ip; }, 1, 100000000),
    number<sz>("limits.max_filter_values_per_ip", "COMB_MAX_FILTER_VALUES_PER_IP", "their ids, authors, kinds and tag values, summed over the sockets of one client address", [](S& s) -> auto& { return s.max_filter_values_per_ip; }, 1, 1000000000),
    number<sz>("limits.max_pod_filters", "COMB_MAX_POD_FILTERS", "open filters summed over every connection of the pod (0: 300 per connection of max_connections)", [](S& s) -> auto& { return s.max_pod_filters; }, 0, 1000000000),
    number<sz>("limits.max_pod_filter_values", "COMB_MAX_POD_FILTER_VALUES", "their values, summed over every connection of the pod, about 180 bytes of index each (0: 2,000 per connection of max_connections)", [](S& s) -> auto& { return s.max_pod_filter_values; }, 0, 10000000000ULL),
    number<sz>("limits.max_queries_in_flight", "COMB_MAX_QUERIES_IN_FLIGHT", "REQ and COUNT queries of one connection running at once; later ones wait", [](S& s) -> auto& { return s.max_queries_in_flight; }, 1, 10000),
    number<sz>("limits.max_deletion_targets", "COMB_MAX_DELETION_TARGETS", "events and addresses one deletion request (kind 5) may name; more is refused", [](S& s) -> auto& { return s.max_deletion_targets; }, 1, 100000),
    number<std::int64_t>("limits.room_late_seconds", "COMB_ROOM_LATE_SECONDS", "NIP-29 late publication: events posted to a room with a created_at older than this are refused", [](S& s) -> auto& { return s.room_late_seconds; }, 1, 100000000),
    number<std::int64_t>("limits.invite_uses", "COMB_INVITE_USES", "joins one minted invite code (28935) admits; 0: any number (a shareable link)", [](S& s) -> auto& { return s.invite_uses; }, 0, 1000000),
    number<std::int64_t>("limits.invite_ttl_seconds", "COMB_INVITE_TTL_SECONDS", "how long a minted invite code (28935) admits joins", [](S& s) -> auto& { return s.invite_ttl_seconds; }, 60, 10LL * 365 * 86400),
    text("server.metrics_listen", "COMB_METRICS_LISTEN", "address:port serving /metrics (and /healthz, /readyz), never on community hosts; off: none", [](S& s) -> auto& { return s.metrics_listen; }),
    list("server.metrics_hosts", "COMB_METRICS_HOSTS", "comma-separated public names the metrics listener answers besides IP addresses and private names (one label, .local, .internal, .svc...)", [](S& s) -> auto& { return s.metrics_hosts; }),
    list("server.trusted_proxies", "COMB_TRUSTED_PROXIES", "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For / X-Real-IP is believed", [](S& s) -> auto& { return s.trusted_proxies; }),
    flag("websocket.deflate", "COMB_WS_DEFLATE", "offer permessage-deflate", [](S& s) -> auto& { return s.deflate; }),
    number<int>("websocket.deflate_window_bits", "COMB_WS_DEFLATE_WINDOW_BITS", "deflate window (9-15); smaller uses less memory per connection", [](S& s) -> auto& { return s.deflate_window_bits; }, 9, 15),
    number<int>("websocket.deflate_mem_level", "COMB_WS_DEFLATE_MEM_LEVEL", "zlib memory level (1-9); smaller uses less memory per connection", [](S& s) -> auto& { return s.deflate_mem_level; }, 1, 9),
    choice("log.format", "COMB_LOG_FORMAT", "log line format", [](S& s) -> auto& { return s.log_format; }, {"human", "json"}),
    choice("log.level", "COMB_LOG_LEVEL", "lowest level logged", [](S& s) -> auto& { return s.log_level; }, {"trace", "debug", "info", "warn", "error"}),
  };
}

} // namespace

const std::vector<option>& all_options() {
  static const std::vector<option> options = make_options();
  return options;
}

} // namespace comb::conf
