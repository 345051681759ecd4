// SPDX-License-Identifier: MIT
// The cluster handshake without actors: both ends prove the secret, nothing can be reflected,
// and what an unauthenticated remote can make a pod hold is bounded and expires.
#include <catch2/catch.hpp>

#include "actors/bridge/cluster_handshake.hpp"
#include "storage/bridge_auth.hpp"

using namespace comb;
using actors::cluster_handshake;
using namespace std::chrono_literals;

namespace {

const std::string secret = "a shared secret of the cluster!!";
const auto t0 = std::chrono::steady_clock::time_point{} + 1h;

/// Runs a full handshake: `dialer` dialed `acceptor`; returns whether both ends agree.
bool handshake(cluster_handshake& dialer, cluster_handshake& acceptor) {
  auto hello = dialer.dial("to-acceptor", t0);
  auto challenge = acceptor.on_hello("from-dialer", hello, t0);
  if (!challenge)
    return false;
  auto proof = dialer.on_challenge("to-acceptor", challenge.value(), t0);
  if (!proof)
    return false;
  if (acceptor.on_prove("from-dialer", proof.value(), t0))
    return false;
  return dialer.on_welcome("to-acceptor") && acceptor.trusts("from-dialer");
}

} // namespace

TEST_CASE("two pods with the same secret link in both roles", "[bridge]") {
  cluster_handshake a("pod-a", secret), b("pod-b", secret);
  CHECK(handshake(a, b));
  CHECK(a.linked("to-acceptor"));
  CHECK(a.peer_id("to-acceptor") == "pod-b");
  CHECK_FALSE(b.linked("from-dialer")); // trust to receive is not a link to send to
}

TEST_CASE("a pod with another secret is refused at either end", "[bridge]") {
  cluster_handshake good("pod-a", secret), bad("pod-x", "another secret, also 32 characters");
  CHECK_FALSE(handshake(bad, good));
  CHECK_FALSE(good.trusts("from-dialer"));
  cluster_handshake good2("pod-a", secret), bad2("pod-x", "another secret, also 32 characters");
  CHECK_FALSE(handshake(good2, bad2));
  CHECK_FALSE(good2.linked("to-acceptor"));
}

TEST_CASE("a welcome counts only after this pod dialed and verified the peer", "[bridge]") {
  cluster_handshake a("pod-a", secret), b("pod-b", secret);
  CHECK_FALSE(a.on_welcome("someone")); // never dialed
  auto hello = a.dial("to-b", t0);
  CHECK_FALSE(a.on_welcome("to-b")); // dialed, not yet verified
  auto challenge = b.on_hello("from-a", hello, t0);
  REQUIRE(challenge);
  auto forged = challenge.value();
  forged.proof = std::string(64, '0');
  CHECK_FALSE(a.on_challenge("to-b", forged, t0));
  CHECK_FALSE(a.on_welcome("to-b"));
  CHECK_FALSE(a.linked("to-b"));
}

TEST_CASE("an intruder without the secret cannot turn a pod's proofs against it", "[bridge]") {
  cluster_handshake pod("pod-a", secret);
  SECTION("reflecting the pod's own hello back is refused") {
    auto hello = pod.dial("to-intruder", t0);
    auto reflected = pod.on_hello("intruder", hello, t0);
    REQUIRE_FALSE(reflected);
    CHECK_THAT(reflected.error(), Catch::Contains("reflected"));
  }
  SECTION("an acceptor proof obtained from the pod is no dialer proof") {
    // The intruder says hello as "pod-z" and gets the pod's acceptor proof over its own nonce...
    auto challenge = pod.on_hello("intruder", {"pod-z", std::string(32, 'a')}, t0);
    REQUIRE(challenge);
    // ...and replays it as its dialer proof: the role and the ends differ, so it fails.
    auto refused = pod.on_prove("intruder", {"pod-z", challenge.value().proof}, t0);
    REQUIRE(refused);
    CHECK_FALSE(pod.trusts("intruder"));
  }
  SECTION("a challenge naming the pod itself as the acceptor is refused") {
    auto hello = pod.dial("to-intruder", t0);
    cluster_handshake::challenge mirror{"pod-a", std::string(32, 'b'),
                                        storage::cluster_proof("guess", storage::proof_role::acceptor,
                                                               hello.nonce, "pod-a", "pod-a")};
    auto refused = pod.on_challenge("to-intruder", mirror, t0);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error(), Catch::Contains("reflected"));
  }
  SECTION("a proof naming the pod as prover is refused") {
    auto challenge = pod.on_hello("intruder", {"pod-z", std::string(32, 'a')}, t0);
    REQUIRE(challenge);
    auto refused = pod.on_prove("intruder", {"pod-a", std::string(64, '0')}, t0);
    REQUIRE(refused);
    CHECK_THAT(*refused, Catch::Contains("reflected"));
  }
  SECTION("a proof from another connection than the hello's is refused") {
    cluster_handshake honest("pod-b", secret);
    auto hello = honest.dial("to-a", t0);
    auto challenge = pod.on_hello("from-b", hello, t0);
    REQUIRE(challenge);
    auto proof = honest.on_challenge("to-a", challenge.value(), t0);
    REQUIRE(proof);
    CHECK(pod.on_prove("intruder", proof.value(), t0)); // refused: no challenge for this sender
    CHECK_FALSE(pod.trusts("intruder"));
  }
  SECTION("a proof is good once") {
    cluster_handshake honest("pod-b", secret);
    auto hello = honest.dial("to-a", t0);
    auto challenge = pod.on_hello("from-b", hello, t0);
    auto proof = honest.on_challenge("to-a", challenge.value(), t0);
    CHECK_FALSE(pod.on_prove("from-b", proof.value(), t0));
    pod.forget("from-b");
    CHECK(pod.on_prove("from-b", proof.value(), t0)); // the challenge was used up
  }
}

TEST_CASE("pending challenges are bounded and expire", "[bridge]") {
  actors::handshake_limits limits;
  limits.max_pending = 4;
  limits.ttl = 10s;
  cluster_handshake pod("pod-a", secret, limits);
  for (int i = 0; i < 4; ++i)
    REQUIRE(pod.on_hello("k" + std::to_string(i), {"x" + std::to_string(i), std::string(32, 'a')},
                         t0 + std::chrono::seconds(i)));
  // Full: a fifth hello voids the oldest challenge, reported as abandoned.
  REQUIRE(pod.on_hello("k4", {"x4", std::string(32, 'a')}, t0 + 4s));
  CHECK(pod.pending() == 4);
  CHECK(pod.expire(t0 + 4s) == std::vector<std::string>{"x0"});
  CHECK_THAT(*pod.on_prove("k0", {"x0", std::string(64, '0')}, t0 + 4s), Catch::Contains("without a pending"));
  // Ten seconds after each hello its challenge is void, and cannot be answered.
  CHECK(pod.expire(t0 + 10s).empty());
  CHECK(pod.expire(t0 + 12s) == std::vector<std::string>{"x1", "x2"});
  CHECK(pod.pending() == 2);
  CHECK_THAT(*pod.on_prove("k1", {"x1", std::string(64, '0')}, t0 + 12s), Catch::Contains("without a pending"));
}

TEST_CASE("challenges a hello or a proof voids past their time are still reported", "[bridge]") {
  actors::handshake_limits limits;
  limits.max_pending = 4;
  limits.ttl = 10s;
  cluster_handshake pod("pod-a", secret, limits);
  REQUIRE(pod.on_hello("k0", {"x0", std::string(32, 'a')}, t0));
  REQUIRE(pod.on_hello("k1", {"x1", std::string(32, 'a')}, t0 + 1s));
  // Past their time, voided by the next hello and the next proof before the tick asks.
  REQUIRE(pod.on_hello("k2", {"x2", std::string(32, 'a')}, t0 + 10s));
  CHECK(pod.on_prove("k1", {"x1", std::string(64, '0')}, t0 + 11s));
  CHECK(pod.pending() == 1);
  CHECK(pod.expire(t0 + 11s) == std::vector<std::string>{"x0", "x1"});
  CHECK(pod.take_voided_count() == 2);
  // A flood names at most max_pending, and counts every one.
  for (int i = 0; i < 100; ++i)
    REQUIRE(pod.on_hello("f" + std::to_string(i), {"flood", std::string(32, 'a')}, t0 + 12s));
  CHECK(pod.expire(t0 + 12s).size() == limits.max_pending);
  CHECK(pod.take_voided_count() == 97); // 100 hellos and one pending, four kept
  CHECK(pod.take_voided_count() == 0);
}

TEST_CASE("hellos flooding the port do not keep a real dialer out", "[bridge]") {
  actors::handshake_limits limits;
  limits.max_pending = 8;
  cluster_handshake acceptor("pod-a", secret, limits);
  for (int i = 0; i < 100; ++i)
    CHECK(acceptor.on_hello("forged" + std::to_string(i), {"x", std::string(32, 'f')}, t0 + 2s));
  CHECK(acceptor.pending() == 8);
  cluster_handshake late("pod-c", secret);
  auto late_hello = late.dial("to-a", t0 + 2s);
  auto late_challenge = acceptor.on_hello("late", late_hello, t0 + 2s);
  REQUIRE(late_challenge);
  auto proof = late.on_challenge("to-a", late_challenge.value(), t0 + 2s);
  REQUIRE(proof);
  CHECK_FALSE(acceptor.on_prove("late", proof.value(), t0 + 2s));
  CHECK(acceptor.trusts("late"));
}

TEST_CASE("authenticated dialers are remembered up to a bound, oldest forgotten", "[bridge]") {
  actors::handshake_limits limits;
  limits.max_trusted = 2;
  cluster_handshake acceptor("pod-a", secret, limits);
  auto link = [&](const std::string& key, const std::string& id) {
    cluster_handshake dialer(id, secret);
    auto hello = dialer.dial("a", t0);
    auto challenge = acceptor.on_hello(key, hello, t0);
    auto proof = dialer.on_challenge("a", challenge.value(), t0);
    return !acceptor.on_prove(key, proof.value(), t0);
  };
  CHECK(link("k1", "pod-1"));
  CHECK(link("k2", "pod-2"));
  CHECK(link("k3", "pod-3"));
  CHECK_FALSE(acceptor.trusts("k1"));
  CHECK(acceptor.trusts("k2"));
  CHECK(acceptor.trusts("k3"));
}

TEST_CASE("a dialed peer that does not finish is greeted again", "[bridge]") {
  cluster_handshake pod("pod-a", secret);
  (void)pod.dial("to-b", t0);
  CHECK(pod.stalled(t0 + 3s).empty());
  CHECK(pod.stalled(t0 + 4s) == std::vector<std::string>{"to-b"});
  pod.forget("to-b");
  CHECK(pod.stalled(t0 + 20s).empty());
}

TEST_CASE("a new hello on the same connection abandons the previous challenge, reported once",
          "[bridge]") {
  cluster_handshake pod("pod-a", secret);
  REQUIRE(pod.on_hello("k", {"pod-x", std::string(32, 'a')}, t0));
  REQUIRE(pod.on_hello("k", {"pod-x", std::string(32, 'b')}, t0 + 4s));
  CHECK(pod.pending() == 1);
  CHECK(pod.expire(t0 + 5s) == std::vector<std::string>{"pod-x"});
  CHECK(pod.expire(t0 + 6s).empty());
}

TEST_CASE("malformed handshake fields are refused", "[bridge]") {
  cluster_handshake pod("pod-a", secret);
  CHECK_FALSE(pod.on_hello("k", {"", std::string(32, 'a')}, t0));
  CHECK_FALSE(pod.on_hello("k", {"x", "short"}, t0));
  CHECK_FALSE(pod.on_hello("k", {std::string(1000, 'x'), std::string(32, 'a')}, t0));
}
