// SPDX-License-Identifier: MIT
// What the network may queue for the bridge and the gatekeeper: bounded before it is read.
#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "test_system.hpp"
#include "actors/bridge/bridge_actor.hpp"
#include "actors/bridge/cluster_handshake.hpp"
#include "actors/bridge/gatekeeper.hpp"
#include "actors/bridge/inbound_bound.hpp"
#include "actors/messages.hpp"
#include "storage/bridge_auth.hpp"
#include "storage/bridge_envelope.hpp"

using namespace comb::actors;

namespace {

struct fixture : comb::test::test_system {
  std::shared_ptr<relay_metrics> metrics = std::make_shared<relay_metrics>();

  /// A bridge of node "node-a" with the secret "secret", counting into `metrics`.
  bridge_args bridge_of_node_a() const {
    bridge_args args;
    args.node_id = "node-a";
    args.cluster_secret = "secret";
    args.metrics = metrics;
    return args;
  }
};

} // namespace

TEST_CASE("the inbound bound lets one message up to its bytes in, then holds to its counts",
          "[bridge][bounds]") {
  inbound_bound bound(3, 100);
  CHECK_FALSE(bound.try_take(101)); // never, even alone
  CHECK(bound.messages() == 0);
  CHECK(bound.bytes() == 0);
  CHECK(bound.try_take(100)); // alone: as large as the bound
  CHECK_FALSE(bound.try_take(1));
  bound.give_back(100);
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

TEST_CASE_METHOD(fixture, "a peer's reply or stream message takes no place at the gate, so the gate never fills",
                 "[actor][bridge][bounds]") {
  auto bridge = system->spawn([]() -> caf::behavior { return {[](envelope_atom, const std::string&) {}}; });
  auto gate = system->spawn<gatekeeper>(gatekeeper_args{"node-a", "secret", bridge, metrics, {}});
  scheduler->run();
  // A peer chooses the id its messages carry: replies to nothing (CAF drops them unread) and
  // stream messages of an accepted shape.
  auto element_with = [](caf::message_id id) {
    return caf::make_mailbox_element(nullptr, id, {}, welcome_atom_v);
  };
  for (int i = 0; i < 10'000; ++i)
    caf::actor_cast<caf::abstract_actor*>(gate)->enqueue(element_with(caf::make_message_id(i + 1).response_id()), nullptr);
  caf::actor_cast<caf::abstract_actor*>(gate)->enqueue(element_with(caf::make_message_id(caf::message_priority::normal).with_category(caf::message_id::downstream_message_category)), nullptr);
  scheduler->run();
  CHECK(metrics->cluster_dropped_messages == 10'001);
  CHECK(metrics->bridge_inbound_dropped == 0);
  // A real peer's hello is still read.
  caf::anon_send(gate, hello_atom_v, std::string("node-x"), std::string("nonce"));
  CHECK(metrics->bridge_inbound_dropped == 0);
  scheduler->run();
  caf::anon_send(gate, gate_order{gate_order::kind::stop, {}, {}});
  caf::anon_send_exit(bridge, caf::exit_reason::user_shutdown);
  scheduler->run();
}

TEST_CASE_METHOD(fixture, "the bridge gives back what an envelope took once it has checked it",
                 "[actor][bridge][bounds]") {
  auto args = bridge_of_node_a();
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

TEST_CASE_METHOD(fixture, "numbers another pod skipped have the gap filler fill once, from the earliest",
                 "[actor][bridge]") {
  auto args = bridge_of_node_a();
  auto inbound = args.inbound;
  auto fills = std::make_shared<std::vector<std::int64_t>>();
  auto filler = system->spawn([fills]() -> caf::behavior {
    return {[fills](ready_atom, std::int64_t since) { fills->push_back(since); }};
  });
  auto bridge = system->spawn(bridge_actor, std::move(args));
  caf::anon_send(bridge, bridge_watcher{{}, filler});
  scheduler->run();
  const auto boot = comb::storage::envelope_clock_ms() - 60'000;
  auto beat = [&](const std::string& origin, std::uint64_t last) {
    auto payload = comb::storage::encode_heartbeat("secret", origin, {boot, last});
    REQUIRE(inbound->try_take(payload.size()));
    caf::anon_send(bridge, redis_atom_v, payload);
    scheduler->run();
  };
  beat("node-b", 0); // first heard, nothing sent yet
  beat("node-b", 0);
  beat("node-c", 0);
  CHECK(metrics->bridge_sequence_gaps == 0);
  beat("node-b", 2); // two envelopes of node-b never came (its Redis link was down)
  beat("node-c", 1);
  CHECK(metrics->bridge_sequence_gaps == 2);
  CHECK(fills->empty()); // it waits for the transports to settle and for others to join
  // A transport's own loss, further back, joins the same fill.
  const auto lost_at = boot - 5'000;
  caf::anon_send(bridge, ready_atom_v, lost_at);
  scheduler->run();
  // The fill is due before the next heartbeat (which goes nowhere here, and comes again).
  for (int i = 0; i < 10 && fills->empty() && scheduler->trigger_timeout(); ++i)
    scheduler->run();
  CHECK(fills->size() == 1);
  if (!fills->empty())
    CHECK(fills->front() == lost_at);
  CHECK(metrics->bridge_gap_fills == 1);
  beat("node-b", 2); // caught up: no gap, no fill
  CHECK(metrics->bridge_sequence_gaps == 2);
  caf::anon_send_exit(bridge, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(filler, caf::exit_reason::user_shutdown);
  scheduler->run();
}

namespace {

/// A peer that dials the gatekeeper and proves the secret, as a pod's connector does.
caf::behavior proving_dialer(caf::event_based_actor* self, caf::actor gate, std::string node_id,
                             std::string secret) {
  auto handshake = std::make_shared<cluster_handshake>(node_id, secret);
  auto key = caf::to_string(gate.address());
  auto hello = handshake->dial(key, std::chrono::steady_clock::now());
  self->send(gate, hello_atom_v, hello.dialer_id, hello.nonce);
  return {
    [=](challenge_atom, const std::string& id, const std::string& nonce, const std::string& proof) {
      auto answer = handshake->on_challenge(key, {id, nonce, proof}, std::chrono::steady_clock::now());
      if (answer)
        self->send(gate, prove_atom_v, answer.value().dialer_id, answer.value().value);
    },
    [=](welcome_atom) {
      const std::string body = "heard";
      self->send(gate, envelope_atom_v, comb::storage::envelope_mac(secret, body) + body);
    },
    [](envelope_atom, const std::string&) {},
  };
}

} // namespace

/// A gatekeeper whose bridge only records the fills it is asked for.
struct recording_gate {
  static constexpr const char* secret = "the cluster secret";
  fixture& f;
  std::shared_ptr<std::vector<std::int64_t>> fills = std::make_shared<std::vector<std::int64_t>>();
  caf::actor bridge;
  caf::actor gate;

  explicit recording_gate(fixture& on) : f(on) {
    bridge = f.system->spawn([fills = fills]() -> caf::behavior {
      return {
        [fills](ready_atom, std::int64_t since) { fills->push_back(since); },
        [](envelope_atom, const std::string&) {},
      };
    });
    gate = f.system->spawn<gatekeeper>(gatekeeper_args{"node-a", secret, bridge, f.metrics, {}});
    f.scheduler->run();
  }

  /// A peer of `node_id` dials, proves the secret and sends one envelope.
  caf::actor dial(const std::string& node_id) {
    auto peer = f.system->spawn(proving_dialer, gate, node_id, std::string(secret));
    f.scheduler->run();
    return peer;
  }

  /// Runs the timers (the gatekeeper's ticks come again) until a fill came, `rounds` at most.
  void run_timers(int rounds = 10) {
    for (int i = 0; i < rounds && fills->empty() && f.scheduler->trigger_timeout(); ++i)
      f.scheduler->run();
  }

  /// One fill, sent no earlier than `after` and no later than `before` (CHECKs, not REQUIREs:
  /// the actors must stop whatever happened).
  void check_one_fill(std::int64_t after, std::int64_t before) {
    CHECK(fills->size() == 1);
    if (!fills->empty()) {
      CHECK(fills->front() >= after);
      CHECK(fills->front() <= before);
    }
  }

  void stop(const caf::actor& peer) {
    caf::anon_send_exit(peer, caf::exit_reason::user_shutdown);
    caf::anon_send(gate, gate_order{gate_order::kind::stop, {}, {}});
    caf::anon_send_exit(bridge, caf::exit_reason::user_shutdown);
    f.scheduler->run();
  }
};

TEST_CASE_METHOD(fixture, "a dialer back under another node id fills what its old run's gap held",
                 "[actor][bridge]") {
  // A peer that only dials this pod restarts with a new node id: no gap matches it by name, and
  // it has no address of ours to match, yet what its old run stored while the link was down must
  // be filled.
  recording_gate world(*this);
  const auto heard_after = comb::storage::envelope_clock_ms();
  auto old_run = world.dial("node-x");
  caf::anon_send_exit(old_run, caf::exit_reason::kill); // its link drops
  scheduler->run();
  const auto lost_before = comb::storage::envelope_clock_ms();
  auto new_run = world.dial("node-x-restarted");
  world.run_timers();
  world.check_one_fill(heard_after, lost_before);
  world.stop(new_run);
}

TEST_CASE_METHOD(fixture, "a dialer's loss reported after its next run linked is filled from when it was last heard",
                 "[actor][bridge]") {
  // The link died quietly (a host gone, no close): the peer's new run, under another node id,
  // linked before this pod learned of the loss, so no later link will end the gap.
  recording_gate world(*this);
  const auto heard_after = comb::storage::envelope_clock_ms();
  auto old_run = world.dial("node-x"); // proved, and sent an envelope: last heard now
  const auto heard_before = comb::storage::envelope_clock_ms();
  auto new_run = world.dial("node-x-restarted");
  world.run_timers(3);
  CHECK(world.fills->empty()); // nothing was lost yet, as far as this pod knows
  caf::anon_send_exit(old_run, caf::exit_reason::kill); // the late report of the old link's loss
  scheduler->run();
  world.run_timers();
  world.check_one_fill(heard_after, heard_before);
  world.stop(new_run);
}

TEST_CASE_METHOD(fixture, "a proved peer's name on an envelope without the cluster's MAC gets it nowhere",
                 "[actor][bridge][bounds]") {
  auto got = std::make_shared<std::vector<std::string>>();
  auto bridge = system->spawn([got]() -> caf::behavior {
    return {[got](envelope_atom, const std::string& payload) { got->push_back(payload); }};
  });
  auto to_bridge = std::make_shared<inbound_bound>();
  auto gate = system->spawn<gatekeeper>(gatekeeper_args{"node-a", "secret", bridge, metrics, {}, to_bridge});
  // A peer that dials and proves the secret; what the test hands it, it sends under its name
  // (as a node without the secret can, naming it as a routed message's source).
  auto peer = system->spawn([gate](caf::event_based_actor* self) -> caf::behavior {
    self->send(gate, hello_atom_v, std::string("node-x"), std::string(32, 'n'));
    return {
      [=](challenge_atom, const std::string& acceptor, const std::string& nonce, const std::string&) {
        self->send(gate, prove_atom_v, std::string("node-x"),
                   comb::storage::cluster_proof("secret", comb::storage::proof_role::dialer, nonce,
                                                "node-x", acceptor));
      },
      [=](redis_atom, std::string& payload) { self->send(gate, envelope_atom_v, std::move(payload)); },
    };
  });
  scheduler->run();
  const auto refused_before = metrics->bridge_refused_peers.load();
  caf::anon_send(peer, redis_atom_v, std::string(64, '0') + R"({"origin":"node-x"})");
  scheduler->run();
  CHECK(got->empty());
  CHECK(to_bridge->messages() == 0);
  CHECK(metrics->bridge_refused_peers == refused_before + 1);
  // The peer's own envelope, with the MAC: passed on.
  const std::string body = R"({"origin":"node-x"})";
  caf::anon_send(peer, redis_atom_v, comb::storage::envelope_mac("secret", body) + body);
  scheduler->run();
  CHECK(got->size() == 1);
  caf::anon_send(gate, gate_order{gate_order::kind::stop, {}, {}});
  for (const auto& actor : {bridge, peer})
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  scheduler->run();
}
