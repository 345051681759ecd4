// SPDX-License-Identifier: MIT
// What a pod delivers of what another pod bridged: an ephemeral event never meets the database,
// so its author's membership is asked of this pod's own member cache; a stored event the pod
// could not deliver in time is filled from Postgres again, later each time.
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "test_system.hpp"
#include "actors/bridge/bridge_actor.hpp"
#include "actors/bridge/bridged_ephemeral.hpp"
#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "protocol/canonical_json.hpp"
#include "storage/bridge_envelope.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using namespace comb::actors;

namespace {

constexpr std::int64_t closed_community = 7;
constexpr std::int64_t open_community = 8;

const protocol::key_pair member_key = protocol::key_pair::generate();
const protocol::key_pair relay_key = protocol::key_pair::generate();
const protocol::key_pair removed_key = protocol::key_pair::generate();

storage::community_access access_of(std::int64_t id, bool closed) {
  storage::community_access access;
  access.community_id = id;
  access.exists = true;
  access.closed = closed;
  access.version = 1;
  access.members = {{member_key.public_key(), storage::member_role::member}};
  return access;
}

/// A pod's bridge with its registry of two communities (7 closed, 8 open, one member each), and
/// a fan-out that keeps the ids of what the bridge hands it.
struct fixture : test::test_system {
  std::shared_ptr<relay_metrics> metrics = std::make_shared<relay_metrics>();
  std::shared_ptr<std::vector<protocol::bytes32>> delivered = std::make_shared<std::vector<protocol::bytes32>>();
  caf::actor fanout = system->spawn([list = delivered]() -> caf::behavior {
    return {[list](publish_atom, const committed_event& committed) { list->push_back(committed.event.ev->id); }};
  });
  caf::actor writer = system->spawn([]() -> caf::behavior { return {[](tick_atom) {}}; });
  std::shared_ptr<community_registry> registry = std::make_shared<community_registry>(*system, writer, fanout, metrics);
  std::shared_ptr<inbound_bound> inbound = std::make_shared<inbound_bound>();
  caf::actor bridge;

  fixture() {
    for (auto [id, closed] : {std::pair{closed_community, true}, std::pair{open_community, false}})
      REQUIRE(registry->ensure(id, [id, closed] { return std::optional(access_of(id, closed)); }));
    start_bridge({});
  }

  /// The fills asked of the gap filler that start_bridge_recording_fills gives the bridge.
  std::shared_ptr<std::vector<std::int64_t>> fills = std::make_shared<std::vector<std::int64_t>>();
  caf::actor filler;

  /// (Re)starts the bridge with `hold` and a gap filler that records the fills asked of it.
  void start_bridge_recording_fills(hold_bounds hold = {}) {
    filler = system->spawn([list = fills]() -> caf::behavior {
      return {[list](ready_atom, std::int64_t since) { list->push_back(since); }};
    });
    start_bridge(hold, filler);
  }

  /// Lets `how_long` pass on the actors' clock.
  void wait(std::chrono::milliseconds how_long) {
    scheduler->advance_time(how_long);
    scheduler->run();
  }

  /// (Re)starts the bridge with `hold`, and `gap_filler` as its gap filler when given.
  void start_bridge(hold_bounds hold, const caf::actor& gap_filler = {}) {
    if (bridge)
      caf::anon_send_exit(bridge, caf::exit_reason::user_shutdown);
    bridge_args args;
    args.hold = hold;
    args.node_id = "node-a";
    args.cluster_secret = "secret";
    args.metrics = metrics;
    args.fanout = fanout;
    args.registry = registry;
    args.inbound = inbound;
    args.relay_pubkey = relay_key.public_key();
    bridge = system->spawn(bridge_actor, std::move(args));
    if (gap_filler)
      caf::anon_send(bridge, bridge_watcher{{}, gap_filler});
    scheduler->run();
  }

  ~fixture() {
    for (const auto& actor : registry->actors())
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    for (const auto& actor : {bridge, fanout, writer, filler})
      if (actor)
        caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    scheduler->run();
  }

  /// Another pod's envelope of `ev`, sent with the state version its origin held (this pod's
  /// by default).
  void arrives(std::int64_t community, const protocol::event& ev, std::int64_t origin_version = 1) {
    auto payload = storage::encode_envelope("secret", "node-b", community, origin_version,
                                            protocol::render_event_json(ev));
    REQUIRE(inbound->try_take(payload.size()));
    caf::anon_send(bridge, redis_atom_v, payload);
    scheduler->run();
  }

  [[nodiscard]] bool was_delivered(const protocol::event& ev) const {
    return std::find(delivered->begin(), delivered->end(), ev.id) != delivered->end();
  }
};

} // namespace

TEST_CASE("a bridged ephemeral event is withheld when its author is no member of a closed community",
          "[actors][bridge]") {
  member_cache closed, open, unknown;
  for (auto* cache : {&closed, &open}) {
    cache->set_closed(cache == &closed);
    (void)cache->replace({{member_key.public_key(), storage::member_role::member}});
  }
  const auto typing = test::sign_event(removed_key, 20001);
  CHECK(withholds_bridged(typing, closed));
  CHECK_FALSE(withholds_bridged(test::sign_event(member_key, 20001), closed));
  CHECK_FALSE(withholds_bridged(typing, open));
  CHECK_FALSE(withholds_bridged(typing, unknown)); // nothing known yet: the hold waits for it
  // A stored kind was checked by the database in the transaction that stored it.
  CHECK_FALSE(withholds_bridged(test::sign_event(removed_key, 1), closed));
}

TEST_CASE("a bridged ephemeral event in a restricted room is withheld unless its author may write there",
          "[actors][bridge][rooms]") {
  const auto admin_key = protocol::key_pair::generate();
  member_cache open;
  open.set_closed(false);
  (void)open.replace({{member_key.public_key(), storage::member_role::member},
                      {admin_key.public_key(), storage::member_role::admin}});
  protocol::room_state restricted, free_for_all, hidden;
  restricted.exists = free_for_all.exists = hidden.exists = true;
  restricted.id = "board";
  restricted.meta.flags.restricted = true;
  restricted.members = {{member_key.public_key(), {}}};
  free_for_all.id = "lobby";
  hidden.id = "den"; // not restricted, but to outsiders a room that does not exist
  hidden.meta.flags.hidden = true;
  hidden.members = {{member_key.public_key(), {}}};
  open.set_rooms(std::make_shared<const room_index>(std::vector{restricted, free_for_all, hidden}), 1);
  auto in_room = [](const protocol::key_pair& who, std::vector<protocol::tag> tags) {
    return test::sign_event(who, 20001, "typing", std::move(tags));
  };
  CHECK(withholds_bridged(in_room(removed_key, {{"h", "board"}}), open));
  CHECK(withholds_bridged(in_room(removed_key, {{"h", "lobby"}, {"h", "board"}}), open)); // every room it names
  CHECK_FALSE(withholds_bridged(in_room(member_key, {{"h", "board"}}), open));
  CHECK_FALSE(withholds_bridged(in_room(admin_key, {{"h", "board"}}), open)); // the community's admins may
  CHECK_FALSE(withholds_bridged(in_room(removed_key, {{"h", "lobby"}}), open));
  CHECK(withholds_bridged(in_room(removed_key, {{"h", "den"}}), open));
  CHECK_FALSE(withholds_bridged(in_room(member_key, {{"h", "den"}}), open));
  CHECK_FALSE(withholds_bridged(in_room(admin_key, {{"h", "den"}}), open));
  CHECK_FALSE(withholds_bridged(in_room(removed_key, {{"h", "_"}}), open));
  CHECK_FALSE(withholds_bridged(in_room(removed_key, {{"h", "gone"}}), open)); // readers hide a deleted room's
}

TEST_CASE_METHOD(fixture, "a pod delivers another pod's ephemeral events only from those it holds as members",
                 "[actor][bridge]") {
  const auto from_member = test::sign_event(member_key, 20001, "typing");
  const auto from_removed = test::sign_event(removed_key, 20001, "still typing");
  const auto stored_by_removed = test::sign_event(removed_key, 1, "stored before the removal");
  arrives(closed_community, from_member);
  arrives(closed_community, from_removed);
  arrives(closed_community, stored_by_removed);
  arrives(open_community, test::sign_event(removed_key, 20001, "anyone may, here"));
  CHECK(was_delivered(from_member));
  CHECK_FALSE(was_delivered(from_removed));
  CHECK(was_delivered(stored_by_removed));
  CHECK(delivered->size() == 3);
  CHECK(metrics->bridge_withheld == 1);
  CHECK(metrics->bridge_rejected == 0);
}

TEST_CASE_METHOD(fixture, "a kind only the relay publishes is delivered from another pod only as the relay signed it",
                 "[actors][bridge]") {
  // Anyone holding the cluster secret could otherwise show the apps a member list, a delta or
  // room state of their own making (and a list dated far ahead stops every later one here).
  const auto community_key = protocol::key_pair::generate();
  registry->set_signer_of([community_key](const std::string& host) {
    CHECK(host == "keyed.example");
    return community_key.public_key();
  });
  constexpr std::int64_t keyed = 9;
  REQUIRE(registry->ensure(keyed, [] {
    auto access = access_of(keyed, false);
    access.host = "keyed.example";
    return std::optional(access);
  }));
  const auto stranger = protocol::key_pair::generate();
  const auto list = test::sign_event(community_key, 13534, "");
  const auto old_list = test::sign_event(relay_key, 8000, "", {{"p", protocol::to_hex(member_key.public_key())}});
  const auto forged = test::sign_event(stranger, 13534, "", {}, std::numeric_limits<std::int32_t>::max());
  const auto forged_room = test::sign_event(stranger, 39000, "", {{"d", "board"}});
  const auto grant = test::sign_event(community_key, 19004, "");
  const auto note = test::sign_event(stranger, 1);
  for (const auto* ev : {&list, &old_list, &forged, &forged_room, &grant, &note})
    arrives(keyed, *ev);
  CHECK(was_delivered(list));
  CHECK(was_delivered(old_list));
  CHECK(was_delivered(note));
  CHECK_FALSE(was_delivered(forged));
  CHECK_FALSE(was_delivered(forged_room));
  CHECK_FALSE(was_delivered(grant)); // comb never writes 19004
  CHECK(metrics->bridge_rejected == 3);
}

TEST_CASE_METHOD(fixture, "a pod sharing this pod's node id is heard, not taken for an echo",
                 "[actor][bridge]") {
  auto note = test::sign_event(member_key, 1, "from a namesake", {});
  const auto json = protocol::render_event_json(note);
  auto* self = static_cast<caf::stateful_actor<bridge_state>*>(caf::actor_cast<caf::abstract_actor*>(bridge));
  const auto started = self->state.started_ms;
  auto send = [&](const std::string& payload) {
    REQUIRE(inbound->try_take(payload.size()));
    caf::anon_send(bridge, redis_atom_v, payload);
    scheduler->run();
  };
  // This run's own envelope, back from Redis: an echo, dropped.
  send(storage::encode_numbered_envelope("secret", "node-a", {started, 1}, open_community, 1, json));
  CHECK(delivered->empty());
  // Another run under the same id (COMB_NODE_ID copied into every replica): another pod.
  send(storage::encode_numbered_envelope("secret", "node-a", {started - 1000, 1}, open_community, 1, json));
  CHECK(*delivered == std::vector<protocol::bytes32>{note.id});
  CHECK(metrics->bridge_namesakes == 1);
}

TEST_CASE_METHOD(fixture, "an event its origin sends twice under two numbers is delivered once and is no gap",
                 "[actors][bridge][fill]") {
  start_bridge_recording_fills();
  // A client repeats an ephemeral event: its pod carries it to the others twice.
  auto repeated = test::sign_event(member_key, 20001, "typing");
  const auto json = protocol::render_event_json(repeated);
  const storage::envelope_number first{storage::envelope_clock_ms() - 60'000, 1};
  auto send = [&](const std::string& payload) {
    REQUIRE(inbound->try_take(payload.size()));
    caf::anon_send(bridge, redis_atom_v, payload);
    scheduler->run();
  };
  send(storage::encode_numbered_envelope("secret", "node-b", first, open_community, 1, json));
  send(storage::encode_numbered_envelope("secret", "node-b", {first.boot_ms, 2}, open_community, 1, json));
  send(storage::encode_heartbeat("secret", "node-b", {first.boot_ms, 2}));
  send(storage::encode_numbered_envelope("secret", "node-b", {first.boot_ms, 3}, open_community, 1,
                                         protocol::render_event_json(test::sign_event(member_key, 1, "next"))));
  CHECK(delivered->size() == 2);
  CHECK(metrics->bridge_replays == 1);
  CHECK(metrics->bridge_sequence_gaps == 0);
  CHECK(fills->empty());
}

TEST_CASE_METHOD(fixture, "a held event that expired, and a fill Postgres did not answer, are filled again, later each time",
                 "[actors][bridge][fill]") {
  using namespace std::chrono_literals;
  hold_bounds no_wait;
  no_wait.max_wait = 0ms; // Postgres is out of reach: nothing this pod holds catches up
  start_bridge_recording_fills(no_wait);
  const auto before = storage::envelope_clock_ms();
  arrives(closed_community, test::sign_event(member_key, 1, "stored by its origin"), 5);
  CHECK(metrics->bridge_held == 1);
  CHECK(delivered->empty());
  scheduler->advance_time(20ms); // the hold's check: the event waited too long
  scheduler->run();
  CHECK(metrics->bridge_hold_dropped == 1);
  CHECK(metrics->bridge_fill_retries == 1);
  wait(990ms);
  CHECK(fills->empty());
  wait(20ms);
  REQUIRE(fills->size() == 1);
  // Back to when the event came (the gap filler reaches a minute further back).
  CHECK(fills->front() >= before - 1000);
  CHECK(fills->front() <= before + 1000);
  // The filler's Postgres did not answer either: asked again, twice as late.
  caf::anon_send(bridge, unfilled_atom_v, fills->front());
  scheduler->run();
  CHECK(metrics->bridge_fill_retries == 2);
  wait(1900ms);
  CHECK(fills->size() == 1);
  wait(200ms);
  REQUIRE(fills->size() == 2);
  CHECK(fills->back() == fills->front());
  CHECK(delivered->empty());
}

TEST_CASE_METHOD(fixture, "an event whose stored version its origin could not read is filled, not held",
                 "[actors][bridge][fill]") {
  using namespace std::chrono_literals;
  start_bridge_recording_fills();
  const auto before = storage::envelope_clock_ms();
  // Held, it would stand for 5 s before every later event of its community.
  arrives(closed_community, test::sign_event(member_key, 1, "version unknown"), storage::unknown_state_version);
  CHECK(metrics->bridge_held == 0);
  CHECK(metrics->bridge_hold_dropped == 1);
  auto next = test::sign_event(member_key, 1, "stored after a removal this pod has not read");
  arrives(closed_community, next, 5);
  CHECK(metrics->bridge_held == 1);
  auto reloaded = access_of(closed_community, true);
  reloaded.version = 5;
  caf::anon_send(registry->find(closed_community)->actor, refresh_atom_v, reloaded);
  scheduler->run();
  wait(100ms); // the hold's next look, long before the unknown one would have expired
  CHECK(was_delivered(next));
  wait(1s);
  REQUIRE(fills->size() == 1);
  CHECK(fills->front() >= before);
}

TEST_CASE_METHOD(fixture, "a bridged event does not overtake earlier events of its community that wait in the hold",
                 "[actors][bridge]") {
  // A note stored after a removal this pod has not read waits; its author's deletion of it,
  // needing no newer state, must not reach the apps before it.
  using namespace std::chrono_literals;
  start_bridge_recording_fills();
  auto note = test::sign_event(member_key, 1, "stored after a removal this pod has not read");
  auto deletion = test::sign_event(member_key, 5, "", {{"e", protocol::to_hex(note.id)}});
  auto elsewhere = test::sign_event(member_key, 1, "in another community");
  arrives(closed_community, note, 5);
  arrives(closed_community, deletion, 1);
  arrives(open_community, elsewhere, 1);
  CHECK(delivered->size() == 1); // another community's event does not wait
  CHECK(was_delivered(elsewhere));
  auto reloaded = access_of(closed_community, true);
  reloaded.version = 5;
  caf::anon_send(registry->find(closed_community)->actor, refresh_atom_v, reloaded);
  scheduler->run();
  wait(40ms);
  REQUIRE(delivered->size() == 3);
  CHECK((*delivered)[1] == note.id);
  CHECK((*delivered)[2] == deletion.id);
}

TEST_CASE_METHOD(fixture, "an event claiming a state version the database does not hold is dropped when it says so",
                 "[actors][bridge][fill]") {
  // Any holder of the cluster secret may name any version: held, its event would stand for
  // 5 s before every later event of its community, again with each such envelope.
  using namespace std::chrono_literals;
  start_bridge_recording_fills();
  auto asked = std::make_shared<std::vector<std::int64_t>>();
  auto watcher = system->spawn([asked](caf::event_based_actor* self) -> caf::behavior {
    return {[self, asked](access_atom, std::int64_t community, std::int64_t claimed, std::int64_t ask) {
      asked->push_back(claimed);
      if (claimed > 1) // what the database holds
        self->send(caf::actor_cast<caf::actor>(self->current_sender()), database_version_atom_v, community,
                   std::int64_t{1}, ask);
    }};
  });
  caf::anon_send(bridge, bridge_watcher{watcher, filler});
  scheduler->run();
  auto claimed = test::sign_event(member_key, 1, "from a version far ahead");
  auto next = test::sign_event(member_key, 1, "at the version this pod holds");
  arrives(closed_community, claimed, 1'000'000'000'000);
  arrives(closed_community, next, 1);
  wait(40ms); // the hold's next look, long before the claim's wait would end
  CHECK(asked->size() == 1);
  CHECK(metrics->bridge_hold_dropped == 1);
  CHECK_FALSE(was_delivered(claimed));
  CHECK(was_delivered(next));
  wait(1s);
  CHECK(fills->size() == 1); // what of it is stored comes from Postgres
  // A later claim is asked about again, not taken as asked already.
  arrives(closed_community, test::sign_event(member_key, 1, "again"), 1'000'000'000'000);
  CHECK(asked->size() == 2);
  CHECK(metrics->bridge_hold_dropped == 2);
  caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(fixture, "an event held after the database was asked is not judged by that answer",
                 "[actors][bridge][fill]") {
  // The answer reads the database after the ask: an event that came after the ask may have been
  // committed after that read, its claim true. Dropped, an ephemeral one would be lost.
  using namespace std::chrono_literals;
  start_bridge_recording_fills();
  struct ask_seen {
    std::int64_t claimed;
    std::int64_t number;
    caf::actor from;
  };
  auto asks = std::make_shared<std::vector<ask_seen>>();
  auto watcher = system->spawn([asks](caf::event_based_actor* self) -> caf::behavior {
    return {[self, asks](access_atom, std::int64_t, std::int64_t claimed, std::int64_t ask) {
      asks->push_back({claimed, ask, caf::actor_cast<caf::actor>(self->current_sender())});
    }};
  });
  caf::anon_send(bridge, bridge_watcher{watcher, filler});
  scheduler->run();
  auto false_claim = test::sign_event(member_key, 1, "from a version far ahead");
  auto true_claim = test::sign_event(member_key, 20000, "committed at version 3, after the read");
  arrives(closed_community, false_claim, 1'000'000'000'000);
  REQUIRE(asks->size() == 1);
  arrives(closed_community, true_claim, 3);
  // The database held version 2 when read for the first ask.
  caf::anon_send(bridge, database_version_atom_v, closed_community, std::int64_t{2}, asks->front().number);
  scheduler->run();
  CHECK(metrics->bridge_hold_dropped == 1);
  CHECK_FALSE(was_delivered(false_claim));
  REQUIRE(asks->size() == 2); // the later event's claim is asked about in turn
  CHECK(asks->back().claimed == 3);
  auto reloaded = access_of(closed_community, true);
  reloaded.version = 3;
  caf::anon_send(registry->find(closed_community)->actor, refresh_atom_v, reloaded);
  scheduler->run();
  wait(40ms);
  CHECK(was_delivered(true_claim));
  caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(fixture, "a bridged event the full hold could not take is filled again", "[actors][bridge][fill]") {
  using namespace std::chrono_literals;
  hold_bounds one_only;
  one_only.max_envelopes = 1;
  start_bridge_recording_fills(one_only);
  arrives(closed_community, test::sign_event(member_key, 1, "waits"), 5);
  const auto before = storage::envelope_clock_ms();
  arrives(closed_community, test::sign_event(member_key, 1, "does not fit"), 5);
  CHECK(metrics->bridge_held == 1);
  CHECK(metrics->bridge_hold_dropped == 1);
  CHECK(metrics->bridge_fill_retries == 1);
  wait(1s);
  REQUIRE(fills->size() == 1);
  CHECK(fills->front() >= before);
}

TEST_CASE_METHOD(fixture, "a fresh gap is filled after a second even while a retry waits out its backoff",
                 "[actors][bridge][fill]") {
  using namespace std::chrono_literals;
  start_bridge_recording_fills();
  auto unanswered = [&] {
    caf::anon_send(bridge, unfilled_atom_v, std::int64_t{1'000});
    scheduler->run();
  };
  unanswered();
  wait(1s);
  unanswered();
  wait(2s);
  REQUIRE(fills->size() == 2);
  unanswered(); // the third retry waits 4 s
  wait(1s);
  CHECK(fills->size() == 2);
  caf::anon_send(bridge, ready_atom_v, std::int64_t{2'000}); // Redis is back: a fresh gap
  scheduler->run();
  wait(1s);
  REQUIRE(fills->size() == 3);
  CHECK(fills->back() == 1'000); // one fill, from the earliest of both
  wait(3s); // the retry's own timer finds nothing left to fill
  CHECK(fills->size() == 3);
}

TEST_CASE_METHOD(fixture, "a filled event dropped from the hold is filled again from where its gap began",
                 "[actors][bridge][fill]") {
  using namespace std::chrono_literals;
  hold_bounds no_wait;
  no_wait.max_wait = 0ms;
  start_bridge_recording_fills(no_wait);
  const std::int64_t gap_began = storage::envelope_clock_ms() - 600'000; // a ten-minute cut
  auto ev = std::make_shared<const protocol::event>(test::sign_event(member_key, 1, "from the gap"));
  auto json = std::make_shared<const std::string>(protocol::render_event_json(*ev));
  caf::anon_send(bridge, gap_atom_v, committed_event{closed_community, {ev, json}}, std::int64_t{5}, gap_began);
  scheduler->run();
  CHECK(metrics->bridge_held == 1);
  wait(20ms);
  CHECK(metrics->bridge_hold_dropped == 1);
  wait(1s);
  REQUIRE(fills->size() == 1);
  CHECK(fills->front() == gap_began);
}
