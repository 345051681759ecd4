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

TEST_CASE("an envelope MAC covers every byte of its body, apart from handshake proofs", "[bridge]") {
  auto mac = storage::envelope_mac(secret, R"({"origin":"pod-a"})");
  CHECK(mac.size() == 64);
  CHECK(storage::envelope_mac_matches(secret, R"({"origin":"pod-a"})", mac));
  CHECK_FALSE(storage::envelope_mac_matches(secret, R"({"origin":"pod-b"})", mac));
  CHECK_FALSE(storage::envelope_mac_matches(secret, R"({"origin": "pod-a"})", mac));
  CHECK_FALSE(storage::envelope_mac_matches("x" + secret, R"({"origin":"pod-a"})", mac));
  CHECK_FALSE(storage::envelope_mac_matches(secret, R"({"origin":"pod-a"})", ""));
  // printf '16:comb-envelope-v2;{}' | openssl dgst -sha256 -hmac key
  CHECK(storage::envelope_mac("key", "{}")
        == "fa4bfdccc6d7e2fd3728ac1ccf604a5fec7aabfe2177f80f2f0fade79b9e2cea");
}

TEST_CASE("envelopes decode only with the secret they were made with", "[bridge]") {
  static const auto author = protocol::key_pair::generate();
  auto ev = test::sign_event(author, 1, "hi");
  auto json = protocol::render_event_json(ev);
  auto payload = storage::encode_envelope(secret, "pod-a", 5, 42, json);
  CHECK(payload.starts_with(storage::envelope_mac(secret, payload.substr(64))));

  auto good = storage::decode_envelope(payload, {}, secret);
  REQUIRE(good);
  CHECK(good.value().origin == "pod-a");
  CHECK(good.value().community_id == 5);
  CHECK(good.value().access_version == 42);
  CHECK(good.value().ev->id == ev.id);

  auto wrong = storage::decode_envelope(payload, {}, "another secret, 32 characters ok");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().unauthenticated);

  SECTION("without a MAC it is unauthenticated") {
    for (const std::string& bare : {payload.substr(64), std::string("{}"), std::string()}) {
      auto decoded = storage::decode_envelope(bare, {}, secret);
      REQUIRE_FALSE(decoded);
      CHECK(decoded.error().unauthenticated);
    }
  }
  SECTION("another community, origin, access version, send time or event under the same MAC is unauthenticated") {
    auto moved = payload;
    moved.replace(moved.find("\"community\":5"), 13, "\"community\":6");
    auto renamed = payload;
    renamed.replace(renamed.find("pod-a"), 5, "pod-b");
    auto later = payload;
    later.replace(later.find("\"sent\":") + 7, 1, "9");
    auto older = payload; // an origin that claims to know less than it did
    older.replace(older.find("\"access\":42"), 11, "\"access\":41");
    auto swapped = payload;
    swapped.replace(swapped.find(json), json.size(),
                    protocol::render_event_json(test::sign_event(author, 1, "other")));
    for (const auto& forged : {moved, renamed, later, older, swapped}) {
      auto decoded = storage::decode_envelope(forged, {}, secret);
      REQUIRE_FALSE(decoded);
      CHECK(decoded.error().unauthenticated);
    }
  }
  SECTION("a body its own MAC covers is still checked: shape, id and signature") {
    auto with_mac = [](const std::string& body) { return storage::envelope_mac(secret, body) + body; };
    auto forged = ev;
    forged.content = "changed, same id";
    auto tampered = storage::encode_envelope(secret, "pod-a", 5, 42, protocol::render_event_json(forged));
    auto refused = storage::decode_envelope(tampered, {}, secret);
    REQUIRE_FALSE(refused);
    CHECK_FALSE(refused.error().unauthenticated); // MAC fine, the id check catches it
    const auto sent = std::to_string(storage::envelope_clock_ms());
    for (const std::string& body :
         {std::string("[]"), std::string("{"), R"({"origin":"pod-a","community":5,"event":)" + json + "}",
          R"({"origin":"pod-a","community":5,"sent":)" + sent + R"(,"event":)" + json + "}",
          R"({"origin":"pod-a","community":5,"access":"1","sent":)" + sent + R"(,"event":)" + json + "}",
          R"({"origin":"pod-a","community":5,"access":1,"sent":)" + sent + R"(,"event":)" + json + R"(,"x":1})"}) {
      auto decoded = storage::decode_envelope(with_mac(body), {}, secret);
      REQUIRE_FALSE(decoded);
      CHECK_FALSE(decoded.error().unauthenticated);
    }
  }
  SECTION("an origin is a node id: at most 256 printable characters, as the pods' settings allow") {
    CHECK(storage::decode_envelope(storage::encode_envelope(secret, std::string(256, 'n'), 5, 42, json), {}, secret));
    for (const std::string& origin : {std::string(257, 'n'), std::string(1 << 20, 'n'), std::string(),
                                      std::string("pod a"), std::string("pod\nb")}) {
      auto decoded = storage::decode_envelope(storage::encode_envelope(secret, origin, 5, 42, json), {}, secret);
      REQUIRE_FALSE(decoded);
      CHECK_FALSE(decoded.error().unauthenticated);
    }
    auto beat = storage::encode_heartbeat(secret, std::string(1 << 20, 'n'), {1, 0});
    CHECK_FALSE(storage::decode_envelope(beat, {}, secret));
  }
}

TEST_CASE("a stranger's payload is refused before its JSON is read", "[bridge]") {
  // Anyone who can publish on the Redis channel: a document that takes many times its size
  // once parsed (here 8 MiB of zeros in an array), and one that is not even JSON, are both
  // refused for their MAC alone, never parsed (a parse error would say "malformed").
  std::string heavy = std::string(64, 'a') + R"({"origin":"x","community":1,"sent":1,"event":[)";
  heavy.reserve(8 * 1024 * 1024 + 16);
  while (heavy.size() < 8 * 1024 * 1024)
    heavy += "0,";
  heavy += "0]}";
  std::string broken = std::string(64, 'b') + "{not json";
  for (const auto* payload : {&heavy, &broken}) {
    auto decoded = storage::decode_envelope(*payload, {}, secret);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().unauthenticated);
  }
}

TEST_CASE("a captured envelope replayed later is refused as stale, whatever its event", "[bridge]") {
  // Someone who can read and write the Redis channel keeps a valid envelope (a note since
  // deleted, an 8001 since undone) and publishes it again once the fan-out has forgotten its id.
  static const auto author = protocol::key_pair::generate();
  auto ev = test::sign_event(author, 1, "said, then deleted");
  auto json = protocol::render_event_json(ev);
  const std::int64_t sent = 1'800'000'000'000;
  auto payload = storage::encode_envelope(secret, "pod-a", 5, 42, json, sent);
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
  SECTION("extreme send times are stale, never an overflow") {
    for (std::int64_t extreme : {std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max()}) {
      auto far = storage::encode_envelope(secret, "pod-a", 5, 42, json, extreme);
      auto decoded = storage::decode_envelope(far, {}, secret, sent);
      REQUIRE_FALSE(decoded);
      CHECK(decoded.error().stale);
    }
  }
  SECTION("an envelope made now decodes now") {
    CHECK(storage::decode_envelope(storage::encode_envelope(secret, "pod-a", 5, 42, json), {}, secret));
  }
}

TEST_CASE("a cluster secret must be there and long enough, and the error says how to make one",
          "[bridge]") {
  CHECK_THAT(*storage::cluster_secret_problem(""), Catch::Contains("head -c 32 /dev/urandom"));
  CHECK_THAT(*storage::cluster_secret_problem("short"), Catch::Contains("at least 16"));
  CHECK_FALSE(storage::cluster_secret_problem(secret));
}
