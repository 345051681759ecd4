// SPDX-License-Identifier: MIT
#include "actors/bridge/bridge_setup.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/bridge/cluster_tls.hpp"
#include "actors/bridge/gatekeeper.hpp"
#include "actors/bridge/peer_connector.hpp"
#include "protocol/address.hpp"
#include "storage/bridge_auth.hpp"
#include "storage/redis/redis_url.hpp"

namespace comb::actors {
namespace {

/// Host and port of a cluster address; conf::load_settings already refused anything else.
std::optional<std::pair<std::string, std::uint16_t>> split_host_port(const std::string& text) {
  auto where = protocol::parse_host_and_port(text);
  if (!where)
    return std::nullopt;
  return std::pair{where->host, *where->port};
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ",") + item;
  return out;
}

/// CAF delivers a message from any node that reached the cluster port to the actors registered
/// by name ("ConfigServ", "SpawnServ"), before and beside the gatekeeper's handshake: a
/// stranger could grow ConfigServ's map without bound. Nothing here asks a peer for them
/// (no remote spawning, no automatic connections), so none is left reachable.
void forget_named_actors(caf::actor_system& system) {
  for (const auto& named : system.registry().named_actors())
    system.registry().erase(named.first);
}

bool start_cluster(caf::actor_system& system, const conf::relay_settings& s, pod_bridge& pod,
                   const std::shared_ptr<relay_metrics>& metrics,
                   const std::shared_ptr<inbound_bound>& to_bridge, std::string& error) {
  forget_named_actors(system);
  pod.gate = system.spawn<gatekeeper>(
    gatekeeper_args{pod.node_id, s.cluster_secret, pod.actor, metrics, {}, to_bridge});
  caf::anon_send(pod.actor, bridge_gate{pod.gate});
  const bool tls = conf::cluster_tls(s);
  if (tls)
    spdlog::info("cluster links over mutual TLS: peers must hold a certificate from {}",
                 s.cluster_ca);
  else
    spdlog::warn("cluster links without TLS (no COMB_CLUSTER_CERT/KEY/CA): loopback only ({}{}{})",
                 s.cluster_listen, s.cluster_listen.empty() ? "" : " ", joined(s.cluster_peers));
  if (!s.cluster_listen.empty()) {
    auto where = split_host_port(s.cluster_listen);
    if (!where) {
      error = "COMB_CLUSTER_LISTEN must be host:port";
      return false;
    }
    auto bound = tls ? caf::openssl::publish(pod.gate, where->second, where->first.c_str(), true)
                     : system.middleman().publish(pod.gate, where->second, where->first.c_str(), true);
    if (!bound) {
      error = "cannot listen for cluster peers on " + s.cluster_listen + ": "
              + system.render(bound.error());
      return false;
    }
    pod.cluster_port = *bound;
  }
  for (const auto& peer : s.cluster_peers) {
    auto where = split_host_port(peer);
    if (!where) {
      error = "COMB_CLUSTER_PEERS entries must be host:port, got " + peer;
      return false;
    }
    pod.connectors.push_back(
      system.spawn(peer_connector, peer_connector_args{where->first, where->second, pod.gate, tls}));
  }
  pod.cluster_peers = s.cluster_peers.size();
  return true;
}

} // namespace

std::optional<std::string> bridge_settings_problem(const conf::relay_settings& s) {
  if (wants_cluster(s) || !s.redis_url.empty())
    if (auto problem = storage::cluster_secret_problem(s.cluster_secret))
      return problem;
  storage::redis_detail::redis_endpoint endpoint;
  if (!s.redis_url.empty())
    if (auto problem = storage::redis_detail::parse_redis_url(s.redis_url, endpoint))
      return "COMB_REDIS_URL: " + *problem; // never shows the password
  return cluster_tls_problem(s);
}

bool wants_cluster(const conf::relay_settings& s) {
  return !s.cluster_listen.empty() || !s.cluster_peers.empty();
}

std::string pod_bridge::problem(const relay_metrics& metrics) const {
  if (redis && !redis->problem().empty())
    return redis->problem();
  auto linked = static_cast<std::size_t>(metrics.cluster_peers_linked.load());
  if (linked < cluster_peers)
    return std::to_string(linked) + " of " + std::to_string(cluster_peers) + " cluster peers linked";
  return {};
}

std::string pod_bridge::render_metrics() const {
  if (!redis)
    return {};
  const auto& st = redis->stats();
  auto line = [](const char* name, const char* help, std::uint64_t value) {
    return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name
           + " " + std::to_string(value) + "\n";
  };
  return line("comb_redis_published_total", "Envelopes Redis accepted.", st.published.load())
         + line("comb_redis_publish_failed_total", "Envelopes not published (Redis down or error, or past the bound on what waits for it).",
                st.publish_failed.load())
         + line("comb_redis_received_total", "Messages received on the channel.", st.received.load())
         + line("comb_redis_oversized_total", "Messages received on the channel larger than any envelope (64 MiB): dropped before they were copied.",
                st.oversized.load())
         + line("comb_redis_reconnects_total", "Reconnection attempts.", st.reconnects.load());
}

void pod_bridge::drain(caf::scoped_actor& self, std::chrono::milliseconds wait) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // Its answer comes after every message queued before: the writers' last events are published.
  self->request(actor, wait, drain_atom_v).receive([](bool) {}, [](const caf::error&) {});
  if (redis)
    redis->drain(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
}

void pod_bridge::stop(caf::scoped_actor& self) {
  if (redis)
    redis->stop();
  for (const auto& connector : connectors)
    self->send_exit(connector, caf::exit_reason::user_shutdown);
  if (gate) // refuses exit messages: a remote could send those too
    self->send(gate, gate_order{gate_order::kind::stop, {}, {}});
  self->send_exit(actor, caf::exit_reason::user_shutdown);
}

std::optional<pod_bridge> start_bridge(caf::actor_system& system, boost::asio::io_context& io,
                                       const conf::relay_settings& s, bridge_args args,
                                       std::string& error) {
  if (auto problem = bridge_settings_problem(s)) {
    error = *problem;
    return std::nullopt;
  }
  pod_bridge pod;
  pod.node_id = args.node_id;
  auto metrics = args.metrics;
  if (!s.redis_url.empty())
    pod.redis = std::make_shared<redis_transport>(io, s.redis_url, "comb:events");
  args.redis = pod.redis;
  args.cluster_secret = s.cluster_secret;
  auto inbound = args.inbound;
  pod.actor = system.spawn(bridge_actor, std::move(args));
  if (pod.redis)
    if (auto problem = pod.redis->start(pod.actor, inbound, metrics)) {
      error = "COMB_REDIS_URL: " + *problem;
      return std::nullopt;
    }
  if (wants_cluster(s) && !start_cluster(system, s, pod, metrics, inbound, error))
    return std::nullopt;
  return pod;
}

} // namespace comb::actors
