// SPDX-License-Identifier: MIT
// Envelope numbers: a pod learns that it missed envelopes of another pod from a skipped number
// or a heartbeat ahead of what came, whatever lost them on the way.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "storage/bridge_auth.hpp"
#include "storage/bridge_envelope.hpp"
#include "storage/bridge_sequence.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using storage::envelope_number;

namespace {

constexpr std::int64_t start = 1'800'000'000'000;
constexpr std::int64_t boot = start - 3'600'000; // the other pod has run for an hour

} // namespace

TEST_CASE("numbers in order, and heartbeats that repeat the last one, say nothing was missed",
          "[bridge]") {
  storage::origin_sequences seen(start);
  CHECK_FALSE(seen.heard("pod-a", {boot, 0}, true, start + 10)); // it sent nothing yet
  CHECK_FALSE(seen.heard("pod-a", {boot, 1}, false, start + 20));
  CHECK_FALSE(seen.heard("pod-a", {boot, 2}, false, start + 30));
  CHECK_FALSE(seen.heard("pod-a", {boot, 2}, true, start + 40));
  CHECK_FALSE(seen.heard("pod-a", {boot, 3}, false, start + 50));
  // Not numbered (comb-admin, a start-up list for one peer, an older pod): no claim either way.
  CHECK_FALSE(seen.heard("pod-a", {0, 0}, false, start + 60));
  CHECK_FALSE(seen.heard("pod-a", {boot, 4}, false, start + 70));
}

TEST_CASE("a skipped number is a gap since the origin was last heard", "[bridge]") {
  storage::origin_sequences seen(start);
  CHECK_FALSE(seen.heard("pod-a", {boot, 0}, true, start + 10));
  CHECK_FALSE(seen.heard("pod-a", {boot, 1}, false, start + 20));
  // 2 and 3 were published while pod-a's Redis link was down, or shed under load.
  auto gap = seen.heard("pod-a", {boot, 4}, false, start + 5'000);
  REQUIRE(gap);
  CHECK(*gap == start + 20);
  CHECK_FALSE(seen.heard("pod-a", {boot, 5}, false, start + 5'010));
  // A late one out of order does not take the count back or open another gap.
  CHECK_FALSE(seen.heard("pod-a", {boot, 3}, false, start + 5'020));
  CHECK_FALSE(seen.heard("pod-a", {boot, 6}, false, start + 5'030));
}

TEST_CASE("a heartbeat ahead of the last number received shows a gap of a quiet origin",
          "[bridge]") {
  // 1..7 came before this pod first heard of pod-a: they may have been sent after it started.
  storage::origin_sequences fresh(start);
  auto first = fresh.heard("pod-a", {boot, 7}, true, start + 10);
  REQUIRE(first);
  CHECK(*first == start); // not before this pod started: it had no subscribers then
  CHECK_FALSE(fresh.heard("pod-a", {boot, 8}, false, start + 20));
  auto quiet_gap = fresh.heard("pod-a", {boot, 9}, true, start + 2'020);
  REQUIRE(quiet_gap);
  CHECK(*quiet_gap == start + 20);
}

TEST_CASE("a run not heard before, numbered past 1, is a gap since it began", "[bridge]") {
  storage::origin_sequences seen(start);
  // A pod that started after this one and accepted events before it linked.
  const std::int64_t later_boot = start + 60'000;
  auto gap = seen.heard("pod-b", {later_boot, 3}, false, start + 61'000);
  REQUIRE(gap);
  CHECK(*gap == later_boot);
  // Its first envelope, numbered 1: nothing came before it.
  CHECK_FALSE(seen.heard("pod-c", {later_boot, 1}, false, start + 61'000));
  CHECK(seen.size() == 2);
}

TEST_CASE("a restart under the same node id is a new run: the old run's tail may be missing",
          "[bridge]") {
  storage::origin_sequences seen(start);
  CHECK_FALSE(seen.heard("pod-a", {boot, 1}, false, start + 100));
  const std::int64_t reboot = start + 10'000;
  auto gap = seen.heard("pod-a", {reboot, 1}, false, start + 11'000);
  REQUIRE(gap);
  CHECK(*gap == start + 100); // since the old run was last heard
  // A late envelope of the old run is ignored: the new run's count stands.
  CHECK_FALSE(seen.heard("pod-a", {boot, 2}, false, start + 11'010));
  CHECK_FALSE(seen.heard("pod-a", {reboot, 2}, false, start + 11'020));
}

TEST_CASE("origins are bounded: the one heard from longest ago is forgotten", "[bridge]") {
  storage::origin_sequences seen(start, 2);
  CHECK_FALSE(seen.heard("pod-a", {boot, 1}, false, start + 10));
  CHECK_FALSE(seen.heard("pod-b", {boot, 1}, false, start + 20));
  CHECK_FALSE(seen.heard("pod-a", {boot, 2}, false, start + 30));
  CHECK_FALSE(seen.heard("pod-c", {boot, 1}, false, start + 40)); // pod-b goes
  CHECK(seen.size() == 2);
  // pod-b is a run not heard before now: its next number looks like a gap since its start; it
  // takes the place of pod-a, now the one heard from longest ago.
  CHECK(seen.heard("pod-b", {boot, 2}, false, start + 50));
  CHECK_FALSE(seen.heard("pod-c", {boot, 1}, true, start + 60)); // pod-c was kept: no gap
  CHECK(seen.size() == 2);
}

TEST_CASE("an origin gone silent is a gap at each quiet mark, each from the mark before",
          "[bridge]") {
  storage::origin_sequences seen(start);
  const auto heard = start + 1'000;
  CHECK(seen.heard("pod-a", {boot, 3}, false, heard - 10) == start); // a run not heard before, at 3
  CHECK_FALSE(seen.heard("pod-a", {boot, 3}, true, heard));
  CHECK_FALSE(seen.heard("pod-b", {boot, 0}, true, heard + 3'000));
  CHECK_FALSE(seen.quiet(heard + 5'999)); // heartbeats are due every 2 s: three may be late
  CHECK(seen.quiet(heard + 6'000) == heard);
  CHECK_FALSE(seen.quiet(heard + 7'000)); // once per mark
  CHECK_FALSE(seen.heard("pod-b", {boot, 0}, true, heard + 8'000));
  CHECK(seen.quiet(heard + 14'000) == heard + 8'000); // pod-b, heard again, starts from the first mark
  // pod-a's second mark reaches back to its first: that fill read what was stored until then.
  CHECK(seen.quiet(heard + 20'000) == heard + 6'000);
  CHECK(seen.quiet(heard + 28'000) == heard + 8'000 + 6'000);
  // Marks passed between two calls (the pod was busy) are one answer, from the earliest of them.
  CHECK(seen.quiet(heard + 600'000) == heard + 20'000);
  CHECK_FALSE(seen.quiet(heard + 607'999)); // pod-a passed its last mark: asked for no more
  CHECK(seen.quiet(heard + 608'000) == heard + 8'000 + 180'000);
  CHECK_FALSE(seen.quiet(heard + 2'000'000));
  CHECK(seen.size() == 2);
  // Heard again, still known: its gap reaches back to when it was last heard, not to its boot.
  CHECK(seen.heard("pod-a", {boot, 5}, true, heard + 2'000'000) == heard);
}

TEST_CASE("a replayed heartbeat does not push back the quiet marks of a silent origin", "[bridge]") {
  storage::origin_sequences seen(start);
  const auto heard = start + 1'000;
  CHECK(seen.heard("pod-a", {boot, 3}, false, heard - 10, heard - 10) == start);
  CHECK_FALSE(seen.heard("pod-a", {boot, 3}, true, heard, heard));
  // pod-a goes silent; its last heartbeat, captured, is published again 5 s later.
  CHECK_FALSE(seen.heard("pod-a", {boot, 3}, true, heard + 5'000, heard));
  CHECK(seen.quiet(heard + 6'000) == heard); // the first mark still falls when it was due
  // A genuinely newer heartbeat is heard as before.
  CHECK_FALSE(seen.heard("pod-a", {boot, 3}, true, heard + 7'000, heard + 7'000));
  CHECK_FALSE(seen.quiet(heard + 12'999));
  CHECK(seen.quiet(heard + 13'000) == heard + 7'000);
}

TEST_CASE("numbered envelopes and heartbeats round-trip; old-shape envelopes still decode",
          "[bridge]") {
  const std::string secret = "cluster-secret-for-tests";
  static const auto author = protocol::key_pair::generate();
  const auto event_json = protocol::render_event_json(test::sign_event(author, 1, "hi"));
  const auto now = storage::envelope_clock_ms();
  auto beat = storage::decode_envelope(storage::encode_heartbeat(secret, "pod-a", {boot, 42}, now),
                                       {}, secret, now);
  REQUIRE(beat);
  CHECK(beat.value().heartbeat);
  CHECK(beat.value().origin == "pod-a");
  CHECK(beat.value().number.boot_ms == boot);
  CHECK(beat.value().number.seq == 42);
  CHECK_FALSE(beat.value().ev);

  // A heartbeat's shape with the MAC of another secret is refused like any envelope.
  auto forged = storage::decode_envelope(storage::encode_heartbeat("another", "pod-a", {boot, 1}, now),
                                         {}, secret, now);
  REQUIRE_FALSE(forged);
  CHECK(forged.error().unauthenticated);
  // An old heartbeat is stale as an old envelope is.
  auto old = storage::decode_envelope(
    storage::encode_heartbeat(secret, "pod-a", {boot, 1}, now - 2 * storage::envelope_max_skew_ms),
    {}, secret, now);
  REQUIRE_FALSE(old);
  CHECK(old.error().stale);
  auto numbered = storage::decode_envelope(
    storage::encode_numbered_envelope(secret, "pod-a", {boot, 3}, 5, 42, event_json, now), {},
    secret, now);
  REQUIRE(numbered);
  CHECK_FALSE(numbered.value().heartbeat);
  CHECK(numbered.value().number.seq == 3);
  CHECK(numbered.value().number.boot_ms == boot);
  CHECK(numbered.value().community_id == 5);
  CHECK(*numbered.value().event_json == event_json);
  // An envelope of an earlier version (no boot, no seq) is an unnumbered event.
  auto unnumbered =
    storage::decode_envelope(storage::encode_envelope(secret, "pod-a", 5, 42, event_json, now), {},
                             secret, now);
  REQUIRE(unnumbered);
  CHECK(unnumbered.value().number.seq == 0);
  // Hand-made bodies with the right MAC but a broken number are refused, not guessed at.
  auto sealed = [&](const std::string& body) { return storage::envelope_mac(secret, body) + body; };
  const auto sent = std::to_string(now);
  for (const std::string& body : std::vector<std::string>{
         R"({"origin":"pod-a","sent":)" + sent + R"(,"seq":1})",
         R"({"origin":"pod-a","sent":)" + sent + R"(,"boot":1,"seq":-1})",
         R"({"origin":"pod-a","sent":)" + sent + R"(,"boot":"1","seq":1})",
         R"({"origin":"pod-a","sent":)" + sent + R"(,"boot":1,"seq":1,"extra":0})",
         R"({"origin":"pod-a","sent":)" + sent + R"(,"boot":1})"}) {
    INFO(body);
    auto refused = storage::decode_envelope(sealed(body), {}, secret, now);
    REQUIRE_FALSE(refused);
    CHECK_FALSE(refused.error().unauthenticated);
  }
  CHECK(storage::decode_envelope(sealed(R"({"origin":"pod-a","sent":)" + sent + R"(,"boot":1,"seq":0})"),
                                 {}, secret, now));
}

TEST_CASE("an envelope carries a comment's rooms, room ids only and boundedly many", "[bridge]") {
  const std::string secret = "a cluster secret, 32 characters!";
  const auto now = storage::envelope_clock_ms();
  static const auto author = protocol::key_pair::generate();
  const auto event_json = protocol::render_event_json(test::sign_event(author, 1111, "a comment"));
  const std::vector<std::string> rooms{"kitchen", "pantry"};
  auto carried = storage::decode_envelope(
    storage::encode_numbered_envelope(secret, "pod-a", {now, 1}, 5, 42, event_json, now, &rooms), {},
    secret, now);
  REQUIRE(carried);
  REQUIRE(carried.value().borrowed_rooms);
  CHECK(*carried.value().borrowed_rooms == rooms);
  const std::vector<std::string> none;
  auto empty = storage::decode_envelope(
    storage::encode_numbered_envelope(secret, "pod-a", {now, 2}, 5, 42, event_json, now, &none), {},
    secret, now);
  REQUIRE(empty);
  REQUIRE(empty.value().borrowed_rooms);
  CHECK(empty.value().borrowed_rooms->empty());
  auto plain = storage::decode_envelope(
    storage::encode_numbered_envelope(secret, "pod-a", {now, 3}, 5, 42, event_json, now), {}, secret, now);
  REQUIRE(plain);
  CHECK_FALSE(plain.value().borrowed_rooms);
  // Too many rooms are not sent: the receiver then knows none, and shows the comment only to
  // readers no room hides anything from.
  std::vector<std::string> many(storage::max_envelope_borrowed_rooms + 1, "r");
  auto unsent = storage::decode_envelope(
    storage::encode_numbered_envelope(secret, "pod-a", {now, 4}, 5, 42, event_json, now, &many), {},
    secret, now);
  REQUIRE(unsent);
  CHECK_FALSE(unsent.value().borrowed_rooms);
  auto sealed = [&](const std::string& body) { return storage::envelope_mac(secret, body) + body; };
  const auto head = R"({"origin":"pod-a","community":5,"access":42,"sent":)" + std::to_string(now)
                    + R"(,"boot":1,"seq":1,"rooms":)";
  for (const std::string& bad : {std::string(R"("kitchen")"), std::string(R"([1])"),
                                 std::string(R"(["no spaces"])"), std::string(R"([["x"]])")}) {
    INFO(bad);
    auto refused = storage::decode_envelope(sealed(head + bad + R"(,"event":)" + event_json + "}"), {},
                                            secret, now);
    REQUIRE_FALSE(refused);
    CHECK_FALSE(refused.error().unauthenticated);
  }
  // Rooms for an event in a room of its own, or of a kind that borrows none: a peer's list
  // never overrides the signed `h` (a hidden room's post shown to everyone).
  for (const auto& ev : {test::sign_event(author, 9, "in a hidden room", {{"h", "hidden"}}),
                         test::sign_event(author, 1111, "a comment", {{"h", "hidden"}}),
                         test::sign_event(author, 1, "a note")}) {
    INFO(ev.kind);
    auto overridden = storage::decode_envelope(
      storage::encode_numbered_envelope(secret, "pod-a", {now, 5}, 5, 42, protocol::render_event_json(ev),
                                        now, &none),
      {}, secret, now);
    REQUIRE_FALSE(overridden);
    CHECK_FALSE(overridden.error().unauthenticated);
  }
}

TEST_CASE("a numbered envelope heard again does not push back the quiet marks of a silent origin",
          "[bridge]") {
  storage::origin_sequences seen(start);
  const auto heard = start + 1'000;
  CHECK(seen.heard("pod-a", {boot, 3}, false, heard - 10, heard - 10) == start);
  CHECK_FALSE(seen.heard("pod-a", {boot, 4}, false, heard, heard));
  // pod-a goes silent; its envelope 4, captured, is published again 5 s later.
  CHECK_FALSE(seen.heard("pod-a", {boot, 4}, false, heard + 5'000, heard));
  CHECK(seen.quiet(heard + 6'000) == heard); // the first mark still falls when it was due
  CHECK_FALSE(seen.heard("pod-a", {boot, 5}, false, heard + 7'000, heard + 7'000));
}
