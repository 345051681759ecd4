// SPDX-License-Identifier: MIT
#include "actors/relay_system.hpp"

#include "actors/clock.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <spdlog/spdlog.h>
#include <thread>

#include "actors/bridge/bridge_setup.hpp"
#include "actors/community/access_watcher.hpp"
#include "actors/community/gap_filler.hpp"
#include "actors/fanout/fanout_actor.hpp"
#include "actors/gateway/listen_address.hpp"
#include "actors/gateway/guarded_run.hpp"
#include "actors/gateway/metrics_listener.hpp"
#include "actors/gateway/server.hpp"
#include "actors/management/management_actor.hpp"
#include "actors/messages.hpp"
#include "actors/pod_actors.hpp"
#include "actors/storage/membership_writer.hpp"
#include "actors/storage/storage_actors.hpp"
#include "actors/vital_watch.hpp"
#include "storage/membership_store.hpp"
#include "conf/relay_key.hpp"
#include "protocol/community_key.hpp"
#include "protocol/address.hpp"
#include "protocol/host.hpp"
#include "protocol/nip19.hpp"
#include "storage/community_rekey.hpp"
#include "storage/community_store.hpp"
#include "storage/migrations.hpp"
#include "storage/relay_identity.hpp"
#include "storage/access_change.hpp"
#include "storage/pg_connection.hpp"
#include "storage/pg_listener.hpp"

namespace comb::actors {
namespace asio = boost::asio;

namespace {

/// The fresh-install community: the public URL's host, plus the loopback names at the listen
/// port so a newcomer's client works whichever of them it types.
std::vector<std::string> loopback_aliases(const conf::relay_settings& s) {
  // conf::load_settings refused a listen address without a port.
  const auto port = std::to_string(*protocol::parse_host_and_port(s.listen)->port);
  std::vector<std::string> aliases;
  for (const char* name : {"localhost", "127.0.0.1", "[::1]"})
    if (auto host = protocol::normalize_host(std::string(name) + ":" + port))
      aliases.push_back(*host);
  return aliases;
}

/// `listen` with the port the acceptors took: COMB_LISTEN may say port 0 (tests pick no port in
/// advance, so no other process can take it between the pick and the bind), and the community's
/// aliases, the public URL and the printed address must name the real one.
std::string with_port(const std::string& listen, std::uint16_t port) {
  auto where = protocol::parse_host_and_port(listen); // checked by conf::load_settings
  return where->bracketed_host() + ":" + std::to_string(port);
}

/// Where the relay listens, on stdout for operators and for test harnesses that start it on
/// port 0 and read the ports back: "comb-relay listening on", "metrics on", "cluster links on".
void print_addresses(const conf::relay_settings& s, const metrics_listener& metrics_port,
                     const pod_bridge& bridge) {
  std::cout << "comb-relay listening on " << s.listen << " (" << s.effective_public_url() << ")\n";
  if (metrics_port.port() != 0)
    std::cout << "metrics on http://" << with_port(s.metrics_listen, metrics_port.port())
              << "/metrics\n";
  if (bridge.cluster_port != 0)
    std::cout << "cluster links on " << with_port(s.cluster_listen, bridge.cluster_port) << "\n";
}

/// The relay key and the key the configured community signs with (its NIP-11 `self`), which
/// test harnesses read back: "signing key of <host>: <hex> (<npub>)".
void print_keys(const protocol::key_pair& relay_key, const std::string& primary_host) {
  auto signer = protocol::derive_community_key(relay_key, primary_host);
  std::cout << "relay key: " << protocol::to_hex(relay_key.public_key()) << " ("
            << protocol::encode_nip19("npub", relay_key.public_key())
            << "); each community signs with a key derived from it\n"
            << "signing key of " << primary_host << ": " << protocol::to_hex(signer.public_key())
            << " (" << protocol::encode_nip19("npub", signer.public_key()) << ")" << std::endl;
}

/// Lists written at start-up, for this pod's fan-out.
struct startup_lists {
  bool ok = false;
  bool key_refused = false; ///< the database belongs to another relay key (check_relay_identity)
  std::vector<committed_event> lists;
  std::string primary_host; ///< the configured community's
};

/// The events a start-up write stored (role definitions first, then the list), for the pods.
void collect(std::int64_t community_id, const storage::membership_write& write,
             startup_lists& out) {
  auto add = [&](const protocol::event& ev, const std::string& json) {
    out.lists.push_back({community_id, {std::make_shared<const protocol::event>(ev),
                                        std::make_shared<const std::string>(json)}});
  };
  for (const auto& definition : write.role_definitions)
    add(definition.ev, definition.json);
  if (write.list)
    add(*write.list, write.list_json);
}

/// Events an older comb signed with the relay key move to their community's own key; lists
/// written by an older comb (`["member", <hex>, "member"]`, no 33534 role definitions) are
/// rewritten once in the current NIP-43 shape. Each under its community's lock.
bool upgrade_lists(storage::pg_connection& connection, const protocol::key_pair& key,
                   startup_lists& out) {
  storage::community_store communities(connection);
  auto all = communities.list_all();
  if (!all) {
    spdlog::critical("cannot list the communities: {}", communities.last_error());
    return false;
  }
  storage::membership_store members(connection, key);
  for (const auto& c : *all) {
    auto moved = storage::move_to_community_key(connection, key, c.row.id);
    if (!moved.committed) {
      spdlog::critical("cannot move the events of {} to its own key: {}", c.row.host, moved.error);
      return false;
    }
    if (moved.signed_again + moved.dropped > 0)
      spdlog::info("{}: events moved from the relay key to the community's own key: {} signed"
                   " again, {} already replaced and dropped", c.row.host, moved.signed_again,
                   moved.dropped);
    if (moved.unreadable > 0)
      spdlog::warn("{}: {} stored events signed with the relay key cannot be read and stay as they"
                   " are", c.row.host, moved.unreadable);
    std::string error;
    auto lifted = storage::lift_bans_of_own_keys(connection, key, c.row.id, error);
    if (!lifted) {
      spdlog::critical("cannot lift the bans of the relay's own keys in {}: {}", c.row.host, error);
      return false;
    }
    if (*lifted > 0)
      spdlog::warn("{}: {} ban(s) of the relay's own keys lifted (stored by an older comb)",
                   c.row.host, *lifted);
    auto write = members.upgrade_list(c.row.id, unix_now());
    while (write.retry_at != 0) // lists keep pace with the clock
      write = members.upgrade_list(c.row.id, storage::sleep_until_second(write.retry_at));
    if (!write.committed) {
      spdlog::critical("cannot upgrade the member list of {}: {}", c.row.host, write.error);
      return false;
    }
    if (write.list)
      spdlog::info("member list of {} rewritten in the NIP-43 role shape", c.row.host);
    collect(c.row.id, write, out);
  }
  return true;
}

/// COMB_OWNER_PUBKEY is bootstrapped at every start, in the same transaction as its list.
bool bootstrap_owner(storage::pg_connection& connection, const protocol::key_pair& key,
                     const conf::relay_settings& s, std::int64_t community_id,
                     startup_lists& out) {
  if (s.owner_pubkey.empty())
    return true;
  storage::membership_store members(connection, key);
  storage::membership_command provision{storage::membership_change::provision_owner,
                                        *protocol::parse_public_key(s.owner_pubkey),
                                        storage::member_role::owner, std::nullopt, {}, "bootstrap",
                                        std::nullopt, std::nullopt, {}};
  auto write = members.apply_paced(community_id, std::span(&provision, 1), unix_now(),
                                   storage::sleep_until_second);
  if (!write.committed) {
    spdlog::critical("cannot bootstrap the owner: {}", write.error);
    return false;
  }
  const bool banned = write.results[0].outcome == storage::membership_outcome::banned;
  spdlog::log(banned ? spdlog::level::warn : spdlog::level::info, "owner {}: {}", s.owner_pubkey,
              banned ? "banned here, so not made owner (unbanpubkey lifts the ban)" : storage::outcome_name(write.results[0].outcome));
  collect(community_id, write, out);
  return true;
}

startup_lists prepare_database(const conf::relay_settings& s, const protocol::key_pair& key) {
  startup_lists out;
  storage::pg_connection connection(s.database_url);
  if (auto error = connection.ensure_connected()) {
    spdlog::critical("cannot connect to Postgres: {}", *error);
    return out;
  }
  if (auto error = storage::apply_migrations(connection)) {
    spdlog::critical("database migration failed: {}", *error);
    return out;
  }
  if (auto problem = storage::check_relay_identity(connection, key, s.effective_relay_key_file())) {
    spdlog::critical("{}", *problem);
    out.key_refused = true;
    return out;
  }
  storage::membership_store members(connection, key);
  if (auto moved = members.key_plain_claims(); !moved)
    spdlog::warn("could not move chosen invite codes to keyed hashes (they still admit): {}", members.last_error());
  else if (*moved > 0)
    spdlog::info("moved {} chosen invite code(s) to keyed hashes", *moved);
  auto host = protocol::host_of_relay_url(s.effective_public_url());
  storage::community_store communities(connection);
  auto community = communities.ensure(*host, loopback_aliases(s), s.access == "closed");
  if (!community) {
    spdlog::critical("cannot create the community for {}: {}", *host, communities.last_error());
    return out;
  }
  out.primary_host = community->host;
  spdlog::info("community {} (id {}) is {}", community->host, community->id,
               community->closed ? "closed" : "open");
  if (community->closed != (s.access == "closed"))
    spdlog::warn("COMB_ACCESS={} applies only when the community is created; the database says"
                 " {} is {} (change it with comb-admin community set-access)",
                 s.access, community->host, community->closed ? "closed" : "open");
  out.ok = upgrade_lists(connection, key, out) && bootstrap_owner(connection, key, s, community->id, out);
  return out;
}

std::string node_id_of(const conf::relay_settings& s) {
  if (!s.node_id.empty())
    return s.node_id;
  std::array<std::uint8_t, 8> random{};
  protocol::fill_random(random);
  return protocol::to_hex(random);
}

/// The storage readers' queue depth in Prometheus' text format.
std::string render_reader_queue(const reader_waits& waits) {
  return "# HELP comb_queries_queued REQ and COUNT queries sent to the storage readers and not yet answered.\n"
         "# TYPE comb_queries_queued gauge\ncomb_queries_queued "
         + std::to_string(waits.queued_total()) + "\n";
}

/// The event body cache's counters in Prometheus' text format ("" without a cache).
std::string render_body_cache(const storage::event_body_cache* bodies) {
  if (!bodies)
    return {};
  const auto counts = bodies->counts();
  std::string out;
  auto line = [&out](const char* name, const char* type, const char* help, std::uint64_t value) {
    out += std::string("# HELP ") + name + ' ' + help + "\n# TYPE " + name + ' ' + type + '\n'
           + name + ' ' + std::to_string(value) + '\n';
  };
  line("comb_event_cache_hits_total", "counter", "History rows whose JSON came from the event cache.", counts.hits);
  line("comb_event_cache_misses_total", "counter", "History rows whose JSON was fetched from Postgres.", counts.misses);
  line("comb_event_cache_evictions_total", "counter", "Events dropped from the event cache to keep within its bound.", counts.evictions);
  line("comb_event_cache_bytes", "gauge", "Bytes the event cache holds (JSON and a fixed cost per entry).", counts.bytes);
  line("comb_event_cache_entries", "gauge", "Events the event cache holds.", counts.entries);
  return out;
}

/// Spawns the pod's actors in dependency order; the bridge before anything that publishes.
bool spawn_actors(caf::actor_system& system, asio::io_context& io, const conf::relay_settings& s,
                  const protocol::key_pair& key, const std::shared_ptr<relay_metrics>& metrics,
                  const std::shared_ptr<community_directory>& communities, pod_actors& pod) {
  pod.readers_waiting = std::make_shared<reader_waits>(s.storage_readers);
  if (s.event_cache_bytes > 0)
    pod.bodies = std::make_shared<storage::event_body_cache>(s.event_cache_bytes);
  for (unsigned i = 0; i < s.storage_readers; ++i)
    pod.readers.push_back(system.spawn<caf::detached>(
      storage_reader, reader_args{s.database_url, s.limits.max_limit, s.statement_timeout_ms,
                                  s.max_history_bytes, metrics, pod.readers_waiting, i, pod.bodies}));
  pod.fanout = system.spawn(fanout_actor, fanout_args{pod.readers, metrics, pod.readers_waiting});
  pod.membership_writer = system.spawn<caf::detached>(
    membership_writer, membership_writer_args{s.database_url, key, s.invite_uses, s.invite_ttl_seconds});
  pod.registry =
    std::make_shared<community_registry>(system, pod.membership_writer, pod.fanout, metrics,
                                         vital_loss(pod));
  pod.registry->set_signer_of([key](const std::string& primary_host) {
    return protocol::derive_community_key(key, primary_host).public_key();
  });
  std::string error;
  bridge_args bridging;
  bridging.node_id = node_id_of(s);
  bridging.fanout = pod.fanout;
  bridging.registry = pod.registry;
  bridging.metrics = metrics;
  bridging.relay_pubkey = key.public_key();
  pod.bridge = start_bridge(system, io, s, std::move(bridging), error);
  if (!pod.bridge) {
    spdlog::critical("{}", error);
    return false;
  }
  pod.registry->set_bridge(pod.bridge->publisher());
  for (unsigned i = 0; i < s.storage_writers; ++i)
    pod.writers.push_back(system.spawn<caf::detached>(
      storage_writer, writer_args{s.database_url, s.write_batch_max, pod.fanout,
                                  pod.bridge->publisher(), pod.registry, pod.bridge->actor, metrics,
                                  i == 0, pod.bodies}));
  pod.directory = system.spawn<caf::detached>(
    directory_actor,
    directory_args{s.database_url, communities, pod.registry, pod.close_community});
  pod.access_watcher = system.spawn<caf::detached>(
    access_watcher, access_watcher_args{s.database_url, pod.registry, pod.fanout, metrics,
                                        std::chrono::milliseconds(1000), pod.notices});
  pod.gap_filler = system.spawn<caf::detached>(
    gap_filler, gap_filler_args{s.database_url, pod.registry, pod.bridge->actor, metrics});
  caf::anon_send(pod.bridge->actor, bridge_watcher{pod.access_watcher, pod.gap_filler});
  pod.management = system.spawn<caf::detached>(
    management_actor, management_args{s.database_url, key, pod.registry, communities,
                                      metrics, std::chrono::seconds(10), s.invite_uses,
                                      s.invite_ttl_seconds});
  return true;
}

/// The pod's LISTEN connection: notifications and every (re)connect go to the access watcher.
std::shared_ptr<storage::pg_listener> start_listener(asio::io_context& io,
                                                     const conf::relay_settings& s,
                                                     const caf::actor& watcher,
                                                     std::shared_ptr<notice_inbox> notices) {
  auto listener = std::make_shared<storage::pg_listener>(
    io, s.database_url, std::string(storage::access_channel),
    storage::pg_listener_events{
      [watcher] {
        spdlog::info("postgres: listening for access changes");
        caf::anon_send(watcher, reload_atom_v);
      },
      [watcher, notices](std::string payload) {
        if (notices->add(payload))
          caf::anon_send(watcher, notice_atom_v);
      }});
  listener->start();
  return listener;
}

/// An io_context whose pending handlers can be destroyed before it is: socket coroutines still
/// suspended at the end (an HTTP keep-alive, a client that never answered the close) refer to
/// the server, the metrics listener and the counters, which are destroyed before the contexts.
class pod_io_context : public asio::io_context {
public:
  using asio::io_context::io_context;
  /// Every pending handler and suspended coroutine is destroyed; the context stays usable for
  /// destructors (sockets, timers) until it goes.
  void destroy_pending_handlers() { shutdown(); }
};

} // namespace

/// A key file that exists must load (one that does not is made at the first start).
std::optional<std::string> relay_key_problem(const conf::relay_settings& s) {
  const std::string key_file = s.effective_relay_key_file();
  std::error_code looked;
  if (!std::filesystem::exists(key_file, looked))
    return looked ? std::optional("cannot look for relay key file " + key_file + ": " + looked.message())
                  : std::nullopt;
  std::string error;
  if (!conf::load_relay_key(key_file, false, error))
    return error;
  return std::nullopt;
}

std::optional<std::string> startup_problem(const conf::relay_settings& s) {
  if (s.database_url.empty())
    return "COMB_DATABASE_URL is not set (tools/run.sh starts a private Postgres and sets it)";
  if (auto problem = relay_key_problem(s))
    return problem;
  if (auto problem = bridge_settings_problem(s))
    return problem;
  // Listen names are resolved before the database is touched, so a typo creates no community.
  if (auto endpoints = resolve_listen("COMB_LISTEN", s.listen); !endpoints)
    return endpoints.error();
  if (s.metrics_listen != "off")
    if (auto endpoints = resolve_listen("COMB_METRICS_LISTEN", s.metrics_listen); !endpoints)
      return endpoints.error();
  return std::nullopt;
}

int run_relay(const conf::relay_settings& configured) {
  conf::relay_settings s = configured;
  // Before the key file is made: a pod that cannot start leaves no new key behind.
  if (auto problem = startup_problem(s)) {
    spdlog::critical("{}", *problem);
    return 1;
  }
  std::string key_error;
  const std::string key_file = s.effective_relay_key_file();
  std::error_code unknown; // a folder it may not look into: load_relay_key says what is wrong
  const bool key_existed = std::filesystem::exists(key_file, unknown);
  auto key = conf::load_relay_key(key_file, true, key_error);
  if (!key) {
    spdlog::critical("{}", key_error);
    return 1;
  }
  if (!key_existed) // the database refuses it if it belongs to another key (check_relay_identity)
    spdlog::warn("created a new relay key in {}: every pod of a deployment needs the same key file", key_file);

  caf::actor_system_config config;
  config.set("scheduler.max-threads", static_cast<std::size_t>(s.worker_threads));
  config.set("logger.verbosity", caf::atom("quiet"));
  // An idle CAF worker polls its queue 100 times, then 500 times more with a 50 µs sleep
  // between polls, and only then sleeps on a condition variable that an enqueue wakes at once.
  // Under traffic that comes in bursts (a REQ, its rows, its EOSE) the workers lived in the
  // middle phase: about 20 sleeps and wake-ups per REQ, each a context switch that also
  // preempted Postgres. Skipping it halved the relay's CPU per event served (and Postgres's on
  // this 2-core machine) and cut REQ latency; fan-out and ingest spent less CPU too
  // (docs/benchmarks.md, "REQ fixed cost: worker wake-ups").
  config.set("work-stealing.moderate-poll-attempts", std::size_t{0});
  if (wants_cluster(s)) {
    config.load<caf::io::middleman>();
    // A peer that stops reading while its connection stays open (a frozen process, a partition
    // that drops packets) would have every envelope for it buffered without bound until TCP
    // gives up, and no gap would open. Each side sends a heartbeat every second, and a link
    // that brings nothing (no heartbeat, no envelope, no bridge heartbeat) for 10 s is closed:
    // its loss opens a gap, and the connectors dial again.
    config.set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
    config.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(10)});
  }
  if (wants_cluster(s) && conf::cluster_tls(s)) {
    // conf::load_settings checked all three files are there: CAF throws from inside when a
    // node with a CA but no certificate of its own dials.
    config.load<caf::openssl::manager>();
    config.openssl_certificate = s.cluster_cert;
    config.openssl_key = s.cluster_key;
    config.openssl_cafile = s.cluster_ca;
  }
  caf::actor_system system{config};
  // The io_context after the actor system: it goes first, with the handlers that hold actors.
  // One context per I/O thread, each run by its thread alone: threads that shared one context
  // handed its lock and its epoll wait back and forth, about ten context switches per REQ
  // (docs/benchmarks.md, "REQ: one io_context per I/O thread"). `io` also runs the listeners,
  // the LISTEN connection and the signals; sockets go to every context in turn.
  pod_io_context io(1);
  std::vector<std::unique_ptr<pod_io_context>> socket_contexts;
  for (unsigned i = 1; i < s.io_threads; ++i)
    socket_contexts.push_back(std::make_unique<pod_io_context>(1));
  // Bound before the database is touched: a busy port creates no community, and with port 0
  // the community's aliases name the port the system picked.
  std::vector<asio::ip::tcp::acceptor> acceptors;
  try {
    acceptors = open_listeners(io, "COMB_LISTEN", s.listen, asio::socket_base::max_listen_connections);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what()); // names the setting and the address that failed
    return 1;
  }
  s.listen = with_port(s.listen, acceptors.front().local_endpoint().port());
  auto startup = prepare_database(s, *key);
  if (!startup.ok) {
    // A key this start made and the database refused is of no use: the next start, with the
    // deployment's key file in place, must not find this one there.
    if (startup.key_refused && !key_existed && std::filesystem::remove(key_file, unknown))
      spdlog::info("removed {}, the key this start made", key_file);
    return 1;
  }
  auto metrics = std::make_shared<relay_metrics>();
  auto communities = std::make_shared<community_directory>(std::chrono::seconds(5));
  pod_actors pod;
  if (!spawn_actors(system, io, s, *key, metrics, communities, pod)) {
    stop_actors(system, pod);
    return 1;
  }
  // This pod's own subscribers; the other pods deliver them from the database, as every change's
  // events (noted_events, with the notification of the start-up write).
  for (const auto& list : startup.lists)
    caf::anon_send(pod.fanout, publish_atom_v, list);

  auto context = std::make_shared<gateway_context>();
  context->system = &system;
  context->settings = s;
  context->signers = std::make_shared<community_pubkeys>(*key);
  context->fanout = pod.fanout;
  context->writers = pod.writers;
  context->directory = pod.directory;
  context->membership_writer = pod.membership_writer;
  context->management = pod.management;
  context->registry = pod.registry;
  context->readers = pod.readers;
  context->readers_waiting = pod.readers_waiting;
  context->metrics = metrics;
  context->pod_filters = std::make_shared<pod_filter_holdings>(
    metrics, filter_holding{s.pod_filters(), s.pod_filter_values(), 0});
  context->communities = communities;
  context->bridge = pod.bridge->publisher();
  auto listener = start_listener(io, s, pod.access_watcher, pod.notices);
  // Not ready while Postgres is away: the LISTEN connection is the pod's probe of it.
  context->readiness = [&pod, metrics, listener](bool detailed) {
    auto problem = listener->problem();
    if (!problem.empty())
      return detailed ? problem : std::string("postgres unreachable");
    return pod.bridge->problem(*metrics);
  };
  metrics->scrape_extras = [&pod] {
    return pod.registry->render_member_counts() + pod.bridge->render_metrics()
           + render_body_cache(pod.bodies.get()) + render_reader_queue(*pod.readers_waiting);
  };

  server gateway(io, context);
  std::vector<asio::io_context*> all_contexts{&io};
  for (auto& extra : socket_contexts)
    all_contexts.push_back(extra.get());
  gateway.spread_sockets(std::move(all_contexts));
  pod.close_community->set([&gateway, communities](std::int64_t id) {
    communities->forget_community(id);
    gateway.close_community(id);
  });
  pod.registry->hooks()->set(
    [&gateway, communities](std::int64_t id) {
      communities->forget_community(id);
      gateway.close_community(id);
    },
    [&gateway, communities](std::int64_t id) {
      communities->forget_community(id);
      gateway.recheck_community(id);
    },
    [communities](std::int64_t id) { communities->forget_community(id); });
  try {
    gateway.start(std::move(acceptors));
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what()); // names the setting and the address that failed
    stop_actors(system, pod);
    return 1;
  }
  metrics_listener metrics_port(io, context);
  if (s.metrics_listen != "off") {
    try {
      metrics_port.start(s.metrics_listen);
      spdlog::info("metrics on http://{}/metrics", with_port(s.metrics_listen, metrics_port.port()));
    } catch (const std::exception& e) {
      // The relay serves clients without it; the operator sees why scrapes fail.
      spdlog::error("cannot serve metrics: {}", e.what());
    }
  }
  print_addresses(s, metrics_port, *pod.bridge);
  print_keys(*key, startup.primary_host);

  asio::signal_set signals(io, SIGINT, SIGTERM);
  watch_vital(system, pod);
  bool signalled = false; // on `io`'s thread only
  std::function<void(const boost::system::error_code&, int)> on_signal;
  on_signal = [&](const boost::system::error_code& ec, int signal) {
    if (ec)
      return;
    if (std::exchange(signalled, true)) { // an operator who signals twice wants it gone now
      spdlog::warn("signal {} again: exiting without finishing the drain", signal);
      std::_Exit(1);
    }
    signals.async_wait(on_signal);
    spdlog::info("signal {}: answering what each connection asked, then closing it", signal);
    gateway.drain();
    metrics_port.stop();
    std::thread([&] {
      close_connections(gateway);
      finish_writes(system, pod);
      if (pod.bridge && pod.bridge->redis)
        pod.bridge->redis->stop();
      listener->stop();
      io.stop();
    }).detach();
  };
  signals.async_wait(on_signal);
  std::vector<std::thread> threads;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
  for (auto& extra : socket_contexts) {
    keep_running.push_back(asio::make_work_guard(*extra));
    threads.emplace_back([context = extra.get(), &metrics] { run_guarded(*context, *metrics); });
  }
  run_guarded(io, *metrics);
  // The sessions have ended (or had their 5 s): what is left on the other contexts goes too.
  keep_running.clear();
  for (auto& extra : socket_contexts)
    extra->stop();
  for (auto& t : threads)
    t.join();
  pod.registry->hooks()->set(nullptr, nullptr, nullptr); // the server goes away with this scope
  pod.close_community->set(nullptr);
  gateway.end_remaining_actors();
  for (auto& extra : socket_contexts)
    extra->destroy_pending_handlers();
  io.destroy_pending_handlers();
  stop_actors(system, pod);
  spdlog::info("stopped");
  return pod.lost_vital->load() ? 1 : 0;
}

} // namespace comb::actors
