// SPDX-License-Identifier: MIT
// The cluster's pure cryptography: handshake proofs, envelope MACs, and envelopes carrying them.
#include <catch2/catch.hpp>
#include <limits>

#include "storage/bridge_auth.hpp"
#include "storage/bridge_envelope.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using storage::proof_role;

namespace {

const std::string secret = "0123456789abcdef0123456789abcdef";

} // namespace

TEST_CASE("a proof is HMAC-SHA256 of the role, nonce, prover and verifier", "[bridge]") {
  auto proof = storage::cluster_proof(secret, proof_role::dialer, "nonce", "pod-a", "pod-b");
  CHECK(proof.size() == 64);
  CHECK(storage::proof_matches(secret, proof_role::dialer, "nonce", "pod-a", "pod-b", proof));
  SECTION("any other field gives another proof") {
    CHECK_FALSE(storage::proof_matches(secret, proof_role::acceptor, "nonce", "pod-a", "pod-b", proof));
    CHECK_FALSE(storage::proof_matches(secret, proof_role::dialer, "nonce2", "pod-a", "pod-b", proof));
    CHECK_FALSE(storage::proof_matches(secret, proof_role::dialer, "nonce", "pod-b", "pod-a", proof));
    CHECK_FALSE(storage::proof_matches(secret, proof_role::dialer, "nonce", "pod-a", "pod-c", proof));
    CHECK_FALSE(storage::proof_matches("another secret of 32 characters!", proof_role::dialer,
                                       "nonce", "pod-a", "pod-b", proof));
  }
  SECTION("fields are framed: moving a boundary changes the proof") {
    CHECK(storage::cluster_proof(secret, proof_role::dialer, "n", "ab", "c")
          != storage::cluster_proof(secret, proof_role::dialer, "n", "a", "bc"));
  }
  SECTION("an empty, truncated or altered claim never matches") {
    CHECK_FALSE(storage::proof_matches(secret, proof_role::dialer, "nonce", "pod-a", "pod-b", ""));
    CHECK_FALSE(storage::proof_matches(secret, proof_role::dialer, "nonce", "pod-a", "pod-b",
                                       proof.substr(0, 63)));
    auto altered = proof;
    altered[10] = altered[10] == 'a' ? 'b' : 'a';
    CHECK_FALSE(storage::proof_matches(secret, proof_role::dialer, "nonce", "pod-a", "pod-b", altered));
  }
}

TEST_CASE("the proof is the HMAC-SHA256 of its framed message, as openssl dgst computes it", "[bridge]") {
  // Independent check of the framing with OpenSSL's command line, computed once:
  // printf '21:comb-cluster-proof-v1;6:dialer;1:n;1:a;1:b;' | openssl dgst -sha256 -hmac key
  CHECK(storage::cluster_proof("key", proof_role::dialer, "n", "a", "b")
        == "8b67e320eeba6d2ce6995337982a714e8a0c1bc91dd6cbed89fe093bd5cb4303");
}

TEST_CASE("an envelope MAC covers origin, send time, community and event id", "[bridge]") {
  protocol::bytes32 id{};
  id[0] = 7;
  auto mac = storage::envelope_mac(secret, {"pod-a", 1000, 3, id});
  CHECK(storage::envelope_mac_matches(secret, {"pod-a", 1000, 3, id}, mac));
  CHECK_FALSE(storage::envelope_mac_matches(secret, {"pod-b", 1000, 3, id}, mac));
  CHECK_FALSE(storage::envelope_mac_matches(secret, {"pod-a", 1001, 3, id}, mac));
  CHECK_FALSE(storage::envelope_mac_matches(secret, {"pod-a", 1000, 4, id}, mac));
  auto other = id;
  other[31] = 1;
  CHECK_FALSE(storage::envelope_mac_matches(secret, {"pod-a", 1000, 3, other}, mac));
  CHECK_FALSE(storage::envelope_mac_matches("x" + secret, {"pod-a", 1000, 3, id}, mac));
}

TEST_CASE("envelopes decode only with the secret they were made with", "[bridge]") {
  static const auto author = protocol::key_pair::generate();
  auto ev = test::sign_event(author, 1, "hi");
  auto json = protocol::render_event_json(ev);
  auto payload = storage::encode_envelope(secret, "pod-a", 5, ev.id, json);

  auto good = storage::decode_envelope(payload, {}, secret);
  REQUIRE(good);
  CHECK(good.value().origin == "pod-a");
  CHECK(good.value().community_id == 5);
  CHECK(good.value().ev->id == ev.id);

  auto wrong = storage::decode_envelope(payload, {}, "another secret, 32 characters ok");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().unauthenticated);

  SECTION("without a MAC it is unauthenticated") {
    auto bare = R"({"origin":"pod-a","community":5,"sent":1,"event":)" + json + "}";
    auto decoded = storage::decode_envelope(bare, {}, secret);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().unauthenticated);
  }
  SECTION("another community or origin under the same MAC is unauthenticated") {
    auto moved = payload;
    moved.replace(moved.find("\"community\":5"), 13, "\"community\":6");
    auto decoded = storage::decode_envelope(moved, {}, secret);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().unauthenticated);
    auto renamed = payload;
    renamed.replace(renamed.find("pod-a"), 5, "pod-b");
    CHECK(storage::decode_envelope(renamed, {}, secret).error().unauthenticated);
  }
  SECTION("another event under a valid MAC is refused by its id or signature") {
    auto other = test::sign_event(author, 1, "other");
    auto swapped = payload;
    swapped.replace(swapped.find(json), json.size(), protocol::render_event_json(other));
    auto decoded = storage::decode_envelope(swapped, {}, secret);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().unauthenticated); // the MAC covers the id: the other id fails it
    auto forged = ev;
    forged.content = "changed, same id";
    auto tampered = payload;
    tampered.replace(tampered.find(json), json.size(), protocol::render_event_json(forged));
    auto refused = storage::decode_envelope(tampered, {}, secret);
    REQUIRE_FALSE(refused);
    CHECK_FALSE(refused.error().unauthenticated); // MAC fine, the id check catches it
  }
  SECTION("an envelope of the older shape, without its send time, is unauthenticated") {
    auto old_shape = R"({"origin":"pod-a","community":5,"event":)" + json + R"(,"mac":")"
                     + std::string(64, 'a') + "\"}";
    auto decoded = storage::decode_envelope(old_shape, {}, secret);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().unauthenticated);
  }
  SECTION("garbage is malformed, never a crash") {
    for (const char* junk : {"", "[]", "{", R"({"origin":1})", R"({"mac":"00"})"}) {
      auto decoded = storage::decode_envelope(junk, {}, secret);
      CHECK_FALSE(decoded);
    }
  }
}

TEST_CASE("a captured envelope replayed later is refused as stale, whatever its event", "[bridge]") {
  // Someone who can read and write the Redis channel keeps a valid envelope (a note since
  // deleted, an 8001 since undone) and publishes it again once the fan-out has forgotten its id.
  static const auto author = protocol::key_pair::generate();
  auto ev = test::sign_event(author, 1, "said, then deleted");
  auto json = protocol::render_event_json(ev);
  const std::int64_t sent = 1'800'000'000'000;
  auto payload = storage::encode_envelope(secret, "pod-a", 5, ev.id, json, sent);
  const auto skew = storage::envelope_max_skew_ms;

  CHECK(storage::decode_envelope(payload, {}, secret, sent));
  CHECK(storage::decode_envelope(payload, {}, secret, sent + skew));
  CHECK(storage::decode_envelope(payload, {}, secret, sent - skew)); // the sender's clock ahead
  for (std::int64_t now : {sent + skew + 1, sent + 3'600'000, sent - skew - 1}) {
    auto replayed = storage::decode_envelope(payload, {}, secret, now);
    REQUIRE_FALSE(replayed);
    CHECK(replayed.error().stale);
    CHECK_FALSE(replayed.error().unauthenticated);
  }
  SECTION("moving the send time forward breaks the MAC") {
    auto refreshed = payload;
    const auto at = refreshed.find(std::to_string(sent));
    refreshed.replace(at, std::to_string(sent).size(), std::to_string(sent + 3'600'000));
    auto decoded = storage::decode_envelope(refreshed, {}, secret, sent + 3'600'000);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().unauthenticated);
  }
  SECTION("extreme send times are stale, never an overflow") {
    for (std::int64_t extreme : {std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max()}) {
      auto far = storage::encode_envelope(secret, "pod-a", 5, ev.id, json, extreme);
      auto decoded = storage::decode_envelope(far, {}, secret, sent);
      REQUIRE_FALSE(decoded);
      CHECK(decoded.error().stale);
    }
  }
  SECTION("an envelope made now decodes now") {
    CHECK(storage::decode_envelope(storage::encode_envelope(secret, "pod-a", 5, ev.id, json), {},
                                   secret));
  }
}

TEST_CASE("a cluster secret must be there and long enough, and the error says how to make one",
          "[bridge]") {
  CHECK_THAT(*storage::cluster_secret_problem(""), Catch::Contains("head -c 32 /dev/urandom"));
  CHECK_THAT(*storage::cluster_secret_problem("short"), Catch::Contains("at least 16"));
  CHECK_FALSE(storage::cluster_secret_problem(secret));
}
