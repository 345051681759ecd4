// SPDX-License-Identifier: MIT
#include "actors/relay_system.hpp"

#include "actors/clock.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <iostream>
#include <spdlog/spdlog.h>
#include <thread>

#include "actors/bridge/bridge_setup.hpp"
#include "actors/fanout/fanout_actor.hpp"
#include "actors/gateway/server.hpp"
#include "actors/messages.hpp"
#include "actors/storage/membership_writer.hpp"
#include "actors/storage/storage_actors.hpp"
#include "storage/membership_store.hpp"
#include "conf/relay_key.hpp"
#include "protocol/host.hpp"
#include "protocol/nip19.hpp"
#include "storage/community_store.hpp"
#include "storage/migrations.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {
namespace asio = boost::asio;

namespace {

/// The fresh-install community: the public URL's host, plus the loopback names at the listen
/// port so a newcomer's client works whichever of them it types.
std::vector<std::string> loopback_aliases(const conf::relay_settings& s) {
  std::string port = s.listen.substr(s.listen.rfind(':') + 1);
  std::vector<std::string> aliases;
  for (const char* name : {"localhost", "127.0.0.1", "[::1]"})
    if (auto host = protocol::normalize_host(std::string(name) + ":" + port))
      aliases.push_back(*host);
  return aliases;
}

/// Lists written at start-up, to be pushed to the other pods once the bridge is ready.
struct startup_lists {
  bool ok = false;
  std::vector<committed_event> lists;
};

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
                                        std::nullopt};
  auto write = members.apply(community_id, std::span(&provision, 1), unix_now());
  if (!write.committed) {
    spdlog::critical("cannot bootstrap the owner: {}", write.error);
    return false;
  }
  spdlog::info("owner {}: {}", s.owner_pubkey, storage::outcome_name(write.results[0].outcome));
  if (write.list) {
    auto list = std::make_shared<const protocol::event>(*write.list);
    out.lists.push_back(
      {community_id, {list, std::make_shared<const std::string>(write.list_json)}});
  }
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
  auto host = protocol::host_of_relay_url(s.effective_public_url());
  storage::community_store communities(connection);
  auto community = communities.ensure(*host, loopback_aliases(s), s.access == "closed");
  if (!community) {
    spdlog::critical("cannot create the community for {}: {}", *host, communities.last_error());
    return out;
  }
  spdlog::info("community {} (id {}) is {}", community->host, community->id,
               community->closed ? "closed" : "open");
  out.ok = bootstrap_owner(connection, key, s, community->id, out);
  return out;
}

struct pod_actors {
  std::vector<caf::actor> readers;
  caf::actor fanout;
  std::vector<caf::actor> writers;
  caf::actor membership_writer;
  caf::actor directory;
  std::shared_ptr<community_registry> registry;
  std::optional<pod_bridge> bridge;
  /// Set once the server exists; the directory calls it for archived or deleted communities.
  std::shared_ptr<community_closer> close_community = std::make_shared<community_closer>();
};

std::string node_id_of(const conf::relay_settings& s) {
  if (!s.node_id.empty())
    return s.node_id;
  std::array<std::uint8_t, 8> random{};
  protocol::fill_random(random);
  return protocol::to_hex(random);
}

/// Spawns the pod's actors in dependency order; the bridge before anything that publishes.
bool spawn_actors(caf::actor_system& system, asio::io_context& io, const conf::relay_settings& s,
                  const protocol::key_pair& key, const std::shared_ptr<relay_metrics>& metrics,
                  const std::shared_ptr<community_directory>& communities, pod_actors& pod) {
  for (unsigned i = 0; i < s.storage_readers; ++i)
    pod.readers.push_back(system.spawn<caf::detached>(
      storage_reader, reader_args{s.database_url, s.limits.max_limit}));
  pod.fanout = system.spawn(fanout_actor, fanout_args{pod.readers, metrics});
  pod.membership_writer = system.spawn<caf::detached>(
    membership_writer, membership_writer_args{s.database_url, key, 1, 24 * 3600});
  pod.registry =
    std::make_shared<community_registry>(system, pod.membership_writer, pod.fanout, metrics);
  std::string error;
  pod.bridge = start_bridge(system, io, s,
                            bridge_args{node_id_of(s), pod.fanout, pod.registry, key.public_key(),
                                        nullptr, {}, metrics},
                            error);
  if (!pod.bridge) {
    spdlog::critical("{}", error);
    return false;
  }
  pod.registry->set_bridge(pod.bridge->actor);
  for (unsigned i = 0; i < s.storage_writers; ++i)
    pod.writers.push_back(system.spawn<caf::detached>(
      storage_writer, writer_args{s.database_url, s.write_batch_max, pod.fanout,
                                  pod.bridge->actor, metrics, i == 0}));
  pod.directory = system.spawn<caf::detached>(
    directory_actor,
    directory_args{s.database_url, communities, pod.registry, pod.close_community});
  return true;
}

void stop_actors(caf::actor_system& system, pod_actors& pod) {
  caf::scoped_actor self{system};
  for (const auto& writer : pod.writers)
    self->send(writer, shutdown_atom_v);
  for (const auto& writer : pod.writers)
    self->wait_for(writer);
  if (pod.bridge)
    pod.bridge->stop(self);
  for (const auto& reader : pod.readers)
    self->send_exit(reader, caf::exit_reason::user_shutdown);
  self->send_exit(pod.fanout, caf::exit_reason::user_shutdown);
  self->send_exit(pod.directory, caf::exit_reason::user_shutdown);
  self->send_exit(pod.membership_writer, caf::exit_reason::user_shutdown);
  if (pod.registry)
    for (const auto& community : pod.registry->actors())
      self->send_exit(community, caf::exit_reason::user_shutdown);
}

void wait_for_sessions(const server& gateway, std::chrono::seconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (gateway.open_connections() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

} // namespace

int run_relay(const conf::relay_settings& s) {
  std::string key_error;
  auto key = conf::load_relay_key(s.effective_relay_key_file(), true, key_error);
  if (!key) {
    spdlog::critical("{}", key_error);
    return 1;
  }
  if (s.database_url.empty()) {
    spdlog::critical("COMB_DATABASE_URL is not set (tools/run.sh starts a private Postgres and sets it)");
    return 1;
  }
  if (auto problem = bridge_settings_problem(s)) {
    spdlog::critical("{}", *problem);
    return 1;
  }
  auto startup = prepare_database(s, *key);
  if (!startup.ok)
    return 1;

  caf::actor_system_config config;
  config.set("scheduler.max-threads", static_cast<std::size_t>(s.worker_threads));
  config.set("logger.verbosity", caf::atom("quiet"));
  if (wants_cluster(s))
    config.load<caf::io::middleman>();
  if (wants_cluster(s) && conf::cluster_tls(s)) {
    // conf::load_settings checked all three files are there: CAF throws from inside when a
    // node with a CA but no certificate of its own dials.
    config.load<caf::openssl::manager>();
    config.openssl_certificate = s.cluster_cert;
    config.openssl_key = s.cluster_key;
    config.openssl_cafile = s.cluster_ca;
  }
  caf::actor_system system{config};
  auto metrics = std::make_shared<relay_metrics>();
  auto communities = std::make_shared<community_directory>(std::chrono::seconds(5));
  asio::io_context io(static_cast<int>(s.io_threads));
  pod_actors pod;
  if (!spawn_actors(system, io, s, *key, metrics, communities, pod)) {
    stop_actors(system, pod);
    return 1;
  }
  for (const auto& list : startup.lists) {
    caf::anon_send(pod.fanout, publish_atom_v, list);
    caf::anon_send(pod.bridge->actor, startup_atom_v, list);
  }

  auto context = std::make_shared<gateway_context>();
  context->system = &system;
  context->settings = s;
  context->relay_pubkey_hex = protocol::to_hex(key->public_key());
  context->fanout = pod.fanout;
  context->writers = pod.writers;
  context->directory = pod.directory;
  context->membership_writer = pod.membership_writer;
  context->registry = pod.registry;
  context->readers = pod.readers;
  context->metrics = metrics;
  context->communities = communities;
  context->bridge = pod.bridge->actor;
  context->readiness = [&pod, metrics] { return pod.bridge->problem(*metrics); };
  metrics->scrape_extras = [&pod] { return pod.registry->render_member_counts() + pod.bridge->render_metrics(); };

  server gateway(io, context);
  pod.close_community->set([&gateway, communities](std::int64_t id) {
    communities->forget_all();
    gateway.close_community(id);
  });
  try {
    gateway.start();
  } catch (const std::exception& e) {
    spdlog::critical("cannot listen on {}: {}", s.listen, e.what());
    stop_actors(system, pod);
    return 1;
  }
  std::cout << "comb-relay listening on " << s.listen << " (" << s.effective_public_url()
            << ")\nrelay public key: " << context->relay_pubkey_hex << " ("
            << protocol::encode_nip19("npub", key->public_key()) << ")" << std::endl;

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec)
      return;
    spdlog::info("signal {}: closing connections", signal);
    gateway.stop();
    std::thread([&] {
      wait_for_sessions(gateway, std::chrono::seconds(5));
      if (pod.bridge && pod.bridge->redis)
        pod.bridge->redis->stop();
      io.stop();
    }).detach();
  });
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < s.io_threads; ++i)
    threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads)
    t.join();
  gateway.end_remaining_actors();
  stop_actors(system, pod);
  spdlog::info("stopped");
  return 0;
}

} // namespace comb::actors
