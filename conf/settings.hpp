// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/event_check.hpp"
#include "protocol/limits.hpp"

namespace comb::conf {

/// Everything comb-relay can be told. Filled from defaults, then the TOML file, then `COMB_*`
/// environment variables, then command-line flags; see conf/comb.example.toml.
struct relay_settings {
  // -- server --
  std::string listen = "127.0.0.1:7777";
  std::string public_url; ///< empty: "ws://" + listen
  std::string config_file;
  std::string data_dir = "./var";
  unsigned io_threads = 2;
  unsigned worker_threads = 2;
  std::string name = "comb";
  std::string description = "A community relay";
  std::string contact;
  // -- storage --
  std::string database_url; ///< empty: the run command's private cluster
  unsigned storage_readers = 2;
  /// One: a writer's group commit gathers every event that arrives during the commit before it;
  /// a second writer halves each batch and doubles the commits (docs/operations.md, Event writers).
  unsigned storage_writers = 1;
  std::size_t write_batch_max = 256;
  std::uint32_t statement_timeout_ms = 10000; ///< REQ/COUNT queries longer than this are cancelled
  // -- cluster --
  std::string redis_url;
  std::string cluster_listen;
  std::vector<std::string> cluster_peers;
  std::string cluster_secret;
  std::string cluster_cert; ///< PEM certificate of this pod (mutual TLS on cluster links)
  std::string cluster_key;  ///< its PEM private key
  std::string cluster_ca;   ///< PEM CA every peer's certificate must chain to
  std::string node_id; ///< empty: random per start
  // -- keys and the fresh-install community --
  std::string relay_key_file; ///< empty: <data_dir>/relay.key
  std::string owner_pubkey;
  std::string access = "open";
  // -- limits --
  protocol::protocol_limits limits;
  protocol::created_at_window created_at;
  std::size_t max_connections = 10000;
  std::size_t max_outbound_bytes = 32 * 1024 * 1024;
  std::size_t max_pod_outbound_bytes = 1024ULL * 1024 * 1024; ///< queued for all connections
  std::size_t max_inbound_bytes = 1024 * 1024; ///< read and not yet handled, per connection
  std::size_t max_pod_inbound_bytes = 256ULL * 1024 * 1024; ///< the same, over every connection
  /// Of messages clients have begun and not finished, over every connection of the pod.
  std::size_t max_pod_partial_bytes = 256ULL * 1024 * 1024;
  std::size_t max_history_bytes = 16 * 1024 * 1024; ///< history held on its way to one connection
  /// Stored events' JSON the pod's readers keep (storage::event_body_cache); 0: none.
  std::size_t event_cache_bytes = 128 * 1024 * 1024;
  double event_rate = 50;  ///< events per second per connection, sustained
  double event_burst = 200; ///< events a connection may send at once
  std::size_t max_events_in_flight = 256;
  std::uint32_t idle_timeout_seconds = 60;
  // -- bounds on client-driven cost (docs/operations.md, "Bounds") --
  double frame_rate = 100;    ///< frame tokens per second per connection (a frame: 1 + 1 per 16 KiB)
  /// Flotilla sends three REQs per room the user joined, and their CLOSEs, as it starts.
  double frame_burst = 1000;
  double auth_cost = 25;      ///< extra tokens an AUTH takes (SHA-256 + Schnorr)
  /// An address may be a campus, an office or a meetup behind one NAT, everyone starting the
  /// app at once: the budgets of an address are those of a few dozen busy clients.
  double ip_frame_rate = 5000; ///< frame tokens per second per client address, all its connections
  double ip_frame_burst = 20000;
  double ip_request_rate = 50; ///< HTTP requests and upgrades per second per client address
  double ip_request_burst = 250;
  /// Milliseconds of the storage readers per second, and at once, one address's REQs and COUNTs
  /// may take (charged once their statements ran; past them its queued queries are refused).
  double ip_database_ms_rate = 500;
  double ip_database_ms_burst = 20000;
  std::size_t max_connections_per_ip = 256; ///< sockets per client address, counted from accept
  std::size_t max_tracked_ips = 100000;
  std::uint32_t upgrade_timeout_seconds = 10; ///< from accept to a finished request or upgrade
  std::size_t max_open_filters = 500;        ///< filters held by one connection's subscriptions
  std::size_t max_open_filter_values = 10000; ///< ids, authors, kinds, tag values held, summed
  std::size_t max_open_filter_bytes = 1024 * 1024; ///< their bytes (an id or author: 32)
  std::size_t max_broad_filters = 10; ///< filters with no id, author, kind or tag per connection
  std::size_t max_broad_filters_per_ip = 100; ///< the same over the sockets of one address
  /// Filters and their values held over the sockets of one address: each filter is checked
  /// against every event filed under what it names, whoever reads what it matches.
  std::size_t max_filters_per_ip = 5000;
  std::size_t max_filter_values_per_ip = 200000;
  /// The same over the pod: each value is about 180 bytes of the fan-out's index. 0: 300
  /// filters and 2,000 values per connection of max_connections (a member of 50 rooms holds 170
  /// filters while Flotilla syncs, and every client syncs at once after a restart).
  std::size_t max_pod_filters = 0;
  std::size_t max_pod_filter_values = 0;

  [[nodiscard]] std::size_t pod_filters() const noexcept {
    return max_pod_filters != 0 ? max_pod_filters : 300 * max_connections;
  }
  [[nodiscard]] std::size_t pod_filter_values() const noexcept {
    return max_pod_filter_values != 0 ? max_pod_filter_values : 2000 * max_connections;
  }
  std::size_t max_queries_in_flight = 8; ///< REQ/COUNT queries of one connection at once
  std::size_t max_deletion_targets = 1000; ///< events/addresses one kind 5 may name (Flotilla deletes an account in 500 events, with their addresses)
  std::int64_t room_late_seconds = 900; ///< NIP-29: room events older than this are refused
  /// NIP-43 invites (28935) minted for owners and admins: how many joins one code admits (0: any
  /// number, so a link shared in a chat admits everyone it reaches, as the apps' invite dialog
  /// promises) and how long it lasts.
  std::int64_t invite_uses = 0;
  std::int64_t invite_ttl_seconds = 7 * 86400;
  std::vector<std::string> trusted_proxies; ///< addresses/CIDRs whose X-Forwarded-For is believed
  std::string metrics_listen = "127.0.0.1:9777"; ///< /metrics and probes; "off": none
  /// Public names the metrics listener answers besides addresses and private names.
  std::vector<std::string> metrics_hosts;
  // -- WebSocket compression --
  bool deflate = false; // ~35 KiB more per connection when a client accepts it (docs/benchmarks.md)
  int deflate_window_bits = 11;
  int deflate_mem_level = 4;
  // -- logs --
  std::string log_format = "human";
  std::string log_level = "info";

  /// The URL clients type, e.g. ws://127.0.0.1:7777.
  [[nodiscard]] std::string effective_public_url() const;

  [[nodiscard]] std::string effective_relay_key_file() const;
};

/// Whether cluster links run over mutual TLS (certificate, key and CA all set).
[[nodiscard]] bool cluster_tls(const relay_settings& settings);

/// Whether `host` (no port, brackets allowed) is a loopback address or "localhost".
[[nodiscard]] bool loopback_host(std::string_view host);

/// Where a setting came from, for error messages and --print-config.
struct setting_problem {
  std::string option;
  std::string message;
};

/// The file read when neither COMB_CONFIG nor --config names one and it exists: where
/// `cmake --install` puts the configuration of a service.
inline constexpr const char* default_config_file = "/etc/comb/comb.toml";

/// Reads defaults < file (`COMB_CONFIG` or the "config" override; when neither is given,
/// `fallback_file` if it exists; `COMB_CONFIG=` names no file) < environment < `overrides`
/// (command-line flags, keyed by the TOML name such as "server.listen").
/// Returns the settings, or every problem found (unknown keys, bad values, out of range).
struct load_result {
  relay_settings settings;
  std::vector<setting_problem> problems;
};

[[nodiscard]] load_result load_settings(const std::map<std::string, std::string>& environment,
                                        const std::map<std::string, std::string>& overrides,
                                        const std::string& fallback_file = default_config_file);

/// The process environment as a map (only COMB_* variables).
[[nodiscard]] std::map<std::string, std::string> comb_environment();

/// The COMB_* variables no setting reads (a typo: `COMB_MAX_CONECTIONS`), leaving out those
/// comb's own scripts set (COMB_CONFIG, COMB_TEST_*, COMB_BUILD_*, COMB_BENCH_*, *_BIN, ...).
[[nodiscard]] std::vector<std::string> unclaimed_variables(const std::map<std::string, std::string>& environment);

/// The effective configuration as TOML, secrets masked.
[[nodiscard]] std::string print_settings(const relay_settings& settings);

} // namespace comb::conf
