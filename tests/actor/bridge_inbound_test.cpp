// SPDX-License-Identifier: MIT
// What the network may queue for the bridge and the gatekeeper: bounded before it is read.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>

#include "actors/bridge/bridge_actor.hpp"
#include "actors/bridge/gatekeeper.hpp"
#include "actors/bridge/inbound_bound.hpp"
#include "actors/messages.hpp"

using namespace comb::actors;

namespace {

struct fixture {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  caf::scheduler::test_coordinator* scheduler = nullptr;
  std::shared_ptr<relay_metrics> metrics = std::make_shared<relay_metrics>();

  fixture() {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    scheduler = &dynamic_cast<caf::scheduler::test_coordinator&>(system->scheduler());
  }
};

} // namespace

TEST_CASE("the inbound bound lets one message of any size in, then holds to its counts",
          "[bridge][bounds]") {
  inbound_bound bound(3, 100);
  CHECK(bound.try_take(1000)); // alone: however large
  CHECK_FALSE(bound.try_take(1));
  bound.give_back(1000);
  CHECK(bound.try_take(60));
  CHECK_FALSE(bound.try_take(50)); // 110 bytes
  CHECK(bound.try_take(40));
  CHECK_FALSE(bound.try_take(1)); // a third message by count, but 100 bytes are held
  bound.give_back(40);
  CHECK(bound.try_take(10));
  CHECK(bound.try_take(10));
  CHECK_FALSE(bound.try_take(0)); // three messages
  CHECK(bound.messages() == 3);
  CHECK(bound.bytes() == 80);
}

TEST_CASE_METHOD(fixture, "a flood on the cluster port is cut at the mailbox, counted, and the gate recovers",
                 "[actor][bridge][bounds]") {
  auto bridge = system->spawn([]() -> caf::behavior { return {[](envelope_atom, const std::string&) {}}; });
  auto gate = system->spawn<gatekeeper>(gatekeeper_args{"node-a", "secret", bridge, metrics, {}});
  scheduler->run();
  const std::string payload(100, 'x');
  for (int i = 0; i < 10'000; ++i) // nobody runs the gatekeeper meanwhile: all of it waits
    caf::anon_send(gate, envelope_atom_v, payload);
  CHECK(metrics->bridge_inbound_dropped == 0);
  caf::anon_send(gate, envelope_atom_v, payload);
  caf::anon_send(gate, hello_atom_v, std::string("node-x"), std::string("nonce"));
  CHECK(metrics->bridge_inbound_dropped == 2);
  scheduler->run(); // read, and refused: nobody proved the secret
  CHECK(metrics->bridge_refused_peers == 10'000);
  caf::anon_send(gate, envelope_atom_v, payload);
  CHECK(metrics->bridge_inbound_dropped == 2);
  scheduler->run();
  CHECK(metrics->bridge_refused_peers == 10'001);
  caf::anon_send(gate, gate_order{gate_order::kind::stop, {}, {}});
  caf::anon_send_exit(bridge, caf::exit_reason::user_shutdown);
  scheduler->run();
}

TEST_CASE_METHOD(fixture, "the bridge gives back what an envelope took once it has checked it",
                 "[actor][bridge][bounds]") {
  bridge_args args;
  args.node_id = "node-a";
  args.cluster_secret = "secret";
  args.metrics = metrics;
  auto inbound = args.inbound;
  auto bridge = system->spawn(bridge_actor, std::move(args));
  const std::string forged(500, 'y');
  REQUIRE(inbound->try_take(forged.size()));
  caf::anon_send(bridge, redis_atom_v, forged);
  REQUIRE(inbound->try_take(forged.size()));
  caf::anon_send(bridge, envelope_atom_v, forged);
  CHECK(inbound->messages() == 2);
  scheduler->run();
  CHECK(inbound->messages() == 0);
  CHECK(inbound->bytes() == 0);
  CHECK(metrics->bridge_unauthenticated == 2);
  caf::anon_send_exit(bridge, caf::exit_reason::user_shutdown);
  scheduler->run();
}
