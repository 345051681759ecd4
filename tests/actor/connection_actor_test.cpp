// SPDX-License-Identifier: MIT
// The connection actor and the fan-out on CAF's deterministic scheduler: events, REQs, live
// delivery and the bounds of frames and subscriptions (fixture: connection_fixture.hpp).
#include <catch2/catch.hpp>

#include "connection_fixture.hpp"
#include "actors/community/membership_requests.hpp"

using namespace comb;
using namespace comb::actors;
using namespace comb::test_connection;

TEST_CASE_METHOD(fixture, "a valid EVENT is stored and answered OK true after the store replies",
                 "[actor][connection]") {
  auto c = connect();
  auto ev = test::sign_event(alice, 1);
  say(c, test::event_frame(ev));
  CHECK(store->store_calls == 1);
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(ev, true, "")});
  say(c, test::event_frame(ev));
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(ev, true, "duplicate: already have this event")});
}

TEST_CASE_METHOD(fixture, "the writer's OKs on the socket free places in the bound on events in flight",
                 "[actor][connection]") {
  base_policy.max_events_in_flight = 1;
  store->hold_writes = true;
  auto c = connect();
  auto first = test::sign_event(alice, 1, "first");
  auto second = test::sign_event(alice, 1, "second");
  say(c, test::event_frame(first));
  say(c, test::event_frame(second));
  CHECK(store->store_calls == 1);
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(second, false, "rate-limited: too many events awaiting storage")});

  // The writer answers on the socket, not through the actor: only its count tells the actor.
  REQUIRE(store->held_writes.size() == 1);
  const auto& route = store->held_writes.front();
  CHECK(route.event_id_hex == protocol::to_hex(first.id));
  route.sink->send(protocol::render_ok(route.event_id_hex, true, ""));
  route.answered->fetch_add(1, std::memory_order_release);
  say(c, test::event_frame(second));
  CHECK(store->store_calls == 2);
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(first, true, "")});
}

TEST_CASE_METHOD(fixture, "events waiting for the pod's writers are bounded in bytes over every connection",
                 "[actor][connection][bounds]") {
  store->hold_writes = true;
  auto first = test::sign_event(alice, 1, "first");
  auto second = test::sign_event(alice, 1, "second");
  const auto weight = storage_waiting_weight(protocol::render_event_json(first));
  metrics->storage_waiting_bytes = max_storage_waiting_bytes - weight; // other connections' events
  auto a = connect();
  auto b = connect();
  say(a, test::event_frame(first));
  say(b, test::event_frame(second));
  CHECK(store->store_calls == 1);
  CHECK(a.sink->take().empty());
  CHECK(b.sink->take()
        == std::vector<std::string>{
          ok_frame(second, false, "rate-limited: the relay is busy storing events; try again shortly")});
  CHECK(metrics->events_refused_storage_busy == 1);
  CHECK(metrics->storage_waiting_bytes == max_storage_waiting_bytes);
  REQUIRE(store->held_writes.size() == 1);
  CHECK(store->held_writes.front().weight == weight); // what the writer gives back with the OK
}

TEST_CASE_METHOD(fixture, "a forged EVENT is refused without touching storage", "[actor][connection]") {
  auto c = connect();
  auto ev = test::sign_event(alice, 1);
  ev.content = "tampered";
  say(c, test::event_frame(ev));
  CHECK(store->store_calls == 0);
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(ev, false, "invalid: event id does not match its content")});
}

TEST_CASE_METHOD(fixture, "malformed frames get one NOTICE and the connection stays usable",
                 "[actor][connection]") {
  auto c = connect();
  say(c, "[\"EVENT\",");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["NOTICE","invalid: malformed JSON"])"});
  auto ev = test::sign_event(alice, 1);
  say(c, test::event_frame(ev));
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(ev, true, "")});
}

TEST_CASE_METHOD(fixture, "a connection whose actor fails closes with 1011 and leaves the fan-out",
                 "[actor][connection]") {
  auto forgotten = std::make_shared<std::vector<std::uint64_t>>();
  fanout = system->spawn([forgotten](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::drop);
    return {[=](forget_atom, std::uint64_t owner, std::int64_t) { forgotten->push_back(owner); }};
  });
  spawned.push_back(fanout);
  auto c = connect();
  const auto owner = next_owner - 1;
  c.sink->fail_next_send(); // the NOTICE for the malformed frame throws
  say(c, "not json");
  run();
  CHECK(c.sink->closed() == close_reason::internal_error);
  CHECK(*forgotten == std::vector<std::uint64_t>{owner});
  CHECK(metrics->connection_failures.load() == 1);
}

TEST_CASE_METHOD(fixture, "a connection's hangup closes nothing and is not counted as a failure",
                 "[actor][connection]") {
  auto c = connect();
  caf::anon_send(c.actor, hangup_atom_v);
  run();
  CHECK_FALSE(c.sink->closed());
  CHECK(metrics->connection_failures.load() == 0);
}

TEST_CASE_METHOD(fixture, "REQ: live registered first, history, EOSE, then live, nothing twice",
                 "[actor][connection][req]") {
  auto stored_before = test::sign_event(alice, 1, "old");
  store->events.push_back(stored_before);
  auto reader = connect();
  auto writer = connect();
  say(reader, R"(["REQ","feed",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1); // fan-out registered, then asked for history
  CHECK(reader.sink->take().empty());

  // Committed while the history query is in flight: it reaches the reader live (held until
  // EOSE) and is also in the history snapshot, yet must be sent once.
  auto racing = test::sign_event(bob, 1, "racing");
  say(writer, test::event_frame(racing));
  CHECK(writer.sink->take() == std::vector<std::string>{ok_frame(racing, true, "")});
  CHECK(reader.sink->take().empty());
  auto live_only = test::sign_event(bob, 7, "not a note");
  say(writer, test::event_frame(live_only));
  CHECK(reader.sink->take().empty());

  release_history();
  CHECK(reader.sink->take()
        == std::vector<std::string>{event_on("feed", racing), event_on("feed", stored_before),
                                    R"(["EOSE","feed"])"});

  auto after = test::sign_event(bob, 1, "after");
  say(writer, test::event_frame(after));
  CHECK(reader.sink->take() == std::vector<std::string>{event_on("feed", after)});
}

TEST_CASE_METHOD(fixture, "a live event held before EOSE and absent from history follows EOSE",
                 "[actor][connection][req]") {
  auto reader = connect();
  auto writer = connect();
  say(reader, R"(["REQ","feed",{"kinds":[1]}])");
  auto ephemeral_like = test::sign_event(bob, 1, "arrives during the query");
  // Published straight to the fan-out, so it is live but not in the store's history.
  caf::anon_send(fanout, publish_atom_v,
                 committed_event{1, {std::make_shared<const protocol::event>(ephemeral_like),
                                     std::make_shared<const std::string>(
                                       protocol::render_event_json(ephemeral_like))}});
  run();
  release_history();
  CHECK(reader.sink->take()
        == std::vector<std::string>{R"(["EOSE","feed"])", event_on("feed", ephemeral_like)});
}

TEST_CASE_METHOD(fixture, "a ban known before delivery withholds the event: held for EOSE or live",
                 "[actor][connection][req][bans]") {
  base_policy.bans = std::make_shared<ban_list>();
  auto reader = connect();
  auto publish_live = [&](const protocol::event& ev) {
    // Straight to the fan-out, as a bridged event or one another writer stored arrives.
    caf::anon_send(fanout, publish_atom_v,
                   committed_event{1, {std::make_shared<const protocol::event>(ev),
                                       std::make_shared<const std::string>(protocol::render_event_json(ev))}});
    run();
  };
  say(reader, R"(["REQ","feed",{"kinds":[1]}])");
  auto held = test::sign_event(bob, 1, "held while history is read, banned meanwhile");
  publish_live(held);
  base_policy.bans->set_event(held.id, true, 0);
  release_history();
  CHECK(reader.sink->take() == std::vector<std::string>{R"(["EOSE","feed"])"});

  base_policy.bans->set_pubkey(bob.public_key(), true, 0);
  publish_live(test::sign_event(bob, 1, "by an author banned before it arrived"));
  CHECK(reader.sink->take().empty());
  auto fine = test::sign_event(alice, 1, "not banned");
  publish_live(fine);
  CHECK(reader.sink->take() == std::vector<std::string>{event_on("feed", fine)});

  // A relay-signed delta's id is predictable: a ban of it made before it is written must not
  // keep it from the subscribers following the member list.
  say(reader, R"(["REQ","deltas",{"kinds":[8000]}])");
  release_history();
  CHECK(reader.sink->take() == std::vector<std::string>{R"(["EOSE","deltas"])"});
  auto delta = test::sign_event(alice, 8000, "", {{"-"}, {"p", std::string(64, 'c')}});
  base_policy.bans->set_event(delta.id, true, 0);
  publish_live(delta);
  CHECK(reader.sink->take() == std::vector<std::string>{event_on("deltas", delta)});
}

TEST_CASE_METHOD(fixture, "CLOSE stops delivery and a reused id replaces the subscription",
                 "[actor][connection][req]") {
  auto reader = connect();
  auto writer = connect();
  say(reader, R"(["REQ","s",{"kinds":[1]}])");
  say(reader, R"(["REQ","s",{"kinds":[7]}])"); // replaces: the first query's reply is dropped
  release_history();
  CHECK(reader.sink->take() == std::vector<std::string>{R"(["EOSE","s"])"});
  auto note = test::sign_event(bob, 1);
  auto reaction = test::sign_event(bob, 7);
  say(writer, test::event_frame(note));
  say(writer, test::event_frame(reaction));
  CHECK(reader.sink->take() == std::vector<std::string>{event_on("s", reaction)});
  say(reader, R"(["CLOSE","s"])");
  say(writer, test::event_frame(test::sign_event(bob, 7, "again")));
  CHECK(reader.sink->take().empty());
}

TEST_CASE_METHOD(fixture, "ephemeral events are delivered live and never stored",
                 "[actor][connection]") {
  auto reader = connect();
  auto writer = connect();
  say(reader, R"(["REQ","e",{"kinds":[20001]}])");
  release_history();
  reader.sink->take();
  auto ephemeral = test::sign_event(bob, 20001, "typing");
  say(writer, test::event_frame(ephemeral));
  CHECK(store->store_calls == 0);
  CHECK(writer.sink->take() == std::vector<std::string>{ok_frame(ephemeral, true, "")});
  CHECK(reader.sink->take() == std::vector<std::string>{event_on("e", ephemeral)});
}

TEST_CASE_METHOD(fixture, "subscriptions past the limit are CLOSED", "[actor][connection]") {
  protocol::protocol_limits limits;
  limits.max_subscriptions_per_connection = 2;
  auto c = connect(false, limits);
  say(c, R"(["REQ","a",{}])");
  say(c, R"(["REQ","b",{}])");
  say(c, R"(["REQ","c",{}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          R"x(["CLOSED","c","rate-limited: too many open subscriptions (at most 2)"])x"});
  say(c, R"(["REQ","a",{"kinds":[1]}])"); // replacing an open one is not a new subscription
  CHECK(c.sink->take().empty());
}

TEST_CASE_METHOD(fixture, "a closed community wants AUTH first, for the right relay",
                 "[actor][connection][auth]") {
  auto c = connect(true);
  say(c, R"(["REQ","s",{}])");
  CHECK(c.sink->take().empty()); // it waits for AUTH a while (auth_grace)
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take()
        == std::vector<std::string>{R"(["CLOSED","s","auth-required: this community requires authentication"])"});
  auto note = test::sign_event(alice, 1);
  say(c, test::event_frame(note));
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(note, false, "auth-required: this community requires authentication")});

  auto wrong_relay = test::sign_event(alice, 22242, "", {{"relay", "wss://other.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(wrong_relay) + "]");
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(wrong_relay, false, "invalid: relay tag names another relay")});

  auto auth = test::sign_event(alice, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  say(c, test::event_frame(note));
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(note, true, "")});
}

TEST_CASE_METHOD(fixture, "protected events need their author to be authenticated",
                 "[actor][connection][auth]") {
  auto c = connect();
  auto mine = test::sign_event(alice, 1, "protected", {{"-"}});
  say(c, test::event_frame(mine));
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(mine, false, "auth-required: this event may only be published by its author")});
  auto auth = test::sign_event(bob, 22242, "", {{"relay", "ws://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  c.sink->take();
  say(c, test::event_frame(mine));
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(mine, false, "restricted: this event may only be published by its author")});
}

TEST_CASE_METHOD(fixture, "clients cannot publish relay-only NIP-43 and NIP-29 kinds", "[actor][connection]") {
  auto c = connect();
  for (std::uint32_t kind : {13534u, 8000u, 8001u, 28935u, 33534u, 39000u, 39005u}) {
    auto ev = test::sign_event(alice, kind, "", {{"-"}});
    say(c, test::event_frame(ev));
    CHECK(c.sink->take()
          == std::vector<std::string>{ok_frame(ev, false, "restricted: only the relay may publish kind " + std::to_string(kind))});
  }
  CHECK(store->store_calls == 0);
}

TEST_CASE_METHOD(fixture, "every frame type is refused past the frame bucket, but a CLOSE of an open subscription is honoured",
                 "[actor][connection][bounds]") {
  base_policy.frame_rate = 0.001;
  base_policy.frame_burst = 3.1; // a small frame takes a little over one token (1 + bytes / 16 KiB)
  auto c = connect();
  say(c, R"(["REQ","s1",{"kinds":[1]}])");
  say(c, R"(["REQ","s2",{"kinds":[1]}])");
  say(c, R"(["REQ","s3",{"kinds":[1]}])");
  CHECK(c.sink->take().empty()); // all three wait on their history
  say(c, R"(["REQ","s4",{"kinds":[1]}])");
  say(c, R"(["COUNT","n",{"kinds":[1]}])");
  auto ev = test::sign_event(alice, 1);
  say(c, test::event_frame(ev));
  say(c, R"(["CLOSE","never-opened"])");
  const std::string why = "rate-limited: slow down, too many messages on this connection";
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_closed("s4", why),
                                                   protocol::render_closed("n", why),
                                                   ok_frame(ev, false, why),
                                                   protocol::render_notice(why)});
  say(c, R"(["CLOSE","s1"])");
  release_history();
  // s1 was closed although no token was left: its history is dropped.
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("s2"), protocol::render_eose("s3")});
  CHECK(metrics->frames_rate_limited.load() == 4);
}

TEST_CASE_METHOD(fixture, "a burst of publishes reaches each connection in publish order",
                 "[actor][fanout]") {
  auto reader = connect();
  auto other = connect();
  say(reader, R"(["REQ","a",{"kinds":[1]}])");
  say(other, R"(["REQ","b",{"kinds":[1]}])");
  release_history();
  reader.sink->take();
  other.sink->take();
  // Queued before the fan-out runs, so that it handles them in one turn.
  std::vector<std::string> expected_a;
  std::vector<std::string> expected_b;
  for (int i = 0; i < 150; ++i) {
    auto ev = test::sign_event(bob, 1, "note " + std::to_string(i));
    auto json = std::make_shared<const std::string>(protocol::render_event_json(ev));
    live_event live{std::make_shared<const protocol::event>(ev), json};
    caf::anon_send(fanout, publish_atom_v, committed_event{1, live});
    expected_a.push_back(event_on("a", ev));
    expected_b.push_back(event_on("b", ev));
  }
  run();
  CHECK(reader.sink->take() == expected_a);
  CHECK(other.sink->take() == expected_b);
}

namespace {

/// Stands in for the community actor: records the membership commands it is asked for.
caf::behavior recording_community(caf::event_based_actor*,
                                  std::shared_ptr<std::vector<storage::membership_command>> asked) {
  return {
    [=](member_atom, std::uint64_t, const storage::membership_command& command) {
      asked->push_back(command);
    },
  };
}

} // namespace

TEST_CASE_METHOD(fixture, "a community closed since the connection opened is closed to its writes too",
                 "[actor][connection][access]") {
  auto asked = std::make_shared<std::vector<storage::membership_command>>();
  community = system->spawn(recording_community, asked);
  spawned.push_back(community);
  base_policy.members = std::make_shared<member_cache>();
  (void)base_policy.members->replace({{alice.public_key(), storage::member_role::member}});
  base_policy.members->set_closed(false);
  auto c = connect(false); // open when it connected
  auto auth = test::sign_event(alice, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  base_policy.members->set_closed(true); // comb-admin closed it; the member's socket stays

  // A member's socket carries no non-member's event in.
  auto from_bob = test::sign_event(bob, 1, "not a member");
  say(c, test::event_frame(from_bob));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(from_bob, false, "restricted: the author of this event is not a member of this community")});
  CHECK(store->store_calls == 0);

  // Nor does a join without an invite code, sent after authenticating as someone else.
  auto bob_auth = test::sign_event(bob, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(bob_auth) + "]");
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(bob_auth, true, "")});
  auto join = test::sign_event(bob, 28934, "", {});
  say(c, test::event_frame(join));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(join, false, "restricted: a join request needs a claim tag with an invite code")});
  CHECK(asked->empty());

  // Reopened: a join needs no code again.
  base_policy.members->set_closed(false);
  auto open_join = test::sign_event(bob, 28934, "again", {});
  say(c, test::event_frame(open_join));
  REQUIRE(asked->size() == 1);
  CHECK(asked->front().change == storage::membership_change::claim_membership);
}

TEST_CASE_METHOD(fixture, "a member removed from a closed community is sent none of what waited in its queue",
                 "[actor][connection][access]") {
  base_policy.members = std::make_shared<member_cache>();
  (void)base_policy.members->replace({{alice.public_key(), storage::member_role::member}});
  base_policy.members->set_closed(true);
  auto c = connect(true);
  auto auth = test::sign_event(alice, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  say(c, R"(["REQ","feed",{"kinds":[1]}])");
  release_history();
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, ""), protocol::render_eose("feed")});
  // The client stops reading: its own posts come back to it live and wait in its queue.
  auto post = test::sign_event(alice, 1, "queued");
  say(c, test::event_frame(post));
  run();
  (void)base_policy.members->replace({}); // removed, on this pod or another
  caf::anon_send(c.actor, revoke_atom_v, std::int64_t{1}, pubkey_list{alice.public_key()});
  run();
  CHECK(c.sink->take()
        == std::vector<std::string>{ok_frame(post, true, ""),
                                    protocol::render_closed("feed", "restricted: you are no longer a member of this community")});
}

TEST_CASE_METHOD(fixture, "a connection has only a few joins and leaves waiting, other requests still go",
                 "[actor][connection][bounds]") {
  auto asked = std::make_shared<std::vector<storage::membership_command>>();
  community = system->spawn(recording_community, asked); // never answers: every request waits
  spawned.push_back(community);
  base_policy.members = std::make_shared<member_cache>();
  base_policy.members->set_closed(false);
  auto c = connect(false);
  auto auth = test::sign_event(bob, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  for (std::size_t i = 0; i < max_waiting_self_requests; ++i) {
    auto kind = i % 2 == 0 ? 28934 : 28936;
    say(c, test::event_frame(test::sign_event(bob, kind, "turn " + std::to_string(i), {})));
  }
  CHECK(c.sink->take().empty());
  CHECK(asked->size() == max_waiting_self_requests);

  auto one_more = test::sign_event(bob, 28936, "one more", {});
  say(c, test::event_frame(one_more));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(one_more, false, "rate-limited: too many membership requests awaiting an answer")});
  CHECK(asked->size() == max_waiting_self_requests);

  auto add = test::sign_event(bob, 9030, "", {{"p", protocol::to_hex(alice.public_key())},
                                               {"relay", "wss://hive.test"}});
  say(c, test::event_frame(add));
  CHECK(c.sink->take().empty());
  REQUIRE(asked->size() == max_waiting_self_requests + 1);
  CHECK(asked->back().change == storage::membership_change::add_member);
}

namespace {

/// Stands in for the community actor: counts the room requests it is asked for, answers none.
caf::behavior recording_rooms(caf::event_based_actor*, std::shared_ptr<std::size_t> asked) {
  return {
    [=](room_atom, std::uint64_t, const storage::room_command&) { ++*asked; },
    [=](member_atom, std::uint64_t, const storage::membership_command&) { ++*asked; },
  };
}

} // namespace

TEST_CASE_METHOD(fixture, "a connection has only a few room joins and leaves waiting, beside its community ones",
                 "[actor][connection][bounds]") {
  // Each of one person's joins and leaves of a room takes a second of the room's own: a key
  // alternating them from many sockets would hold the room's other requests behind it.
  auto asked = std::make_shared<std::size_t>(0);
  community = system->spawn(recording_rooms, asked);
  spawned.push_back(community);
  base_policy.members = std::make_shared<member_cache>();
  base_policy.members->set_closed(false);
  std::vector<protocol::room_state> rooms;
  for (const char* id : {"pizza", "pasta"}) {
    protocol::room_state room;
    room.exists = true;
    room.id = id;
    rooms.push_back(room);
  }
  base_policy.members->set_rooms(std::make_shared<const room_index>(rooms), 1);
  auto c = connect(false);
  auto auth = test::sign_event(bob, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  for (std::size_t i = 0; i < max_waiting_self_requests; ++i) {
    auto kind = i % 2 == 0 ? protocol::room_join_kind : protocol::room_leave_kind;
    say(c, test::event_frame(test::sign_event(bob, kind, "turn " + std::to_string(i), {{"h", "pizza"}})));
  }
  CHECK(c.sink->take().empty());
  CHECK(*asked == max_waiting_self_requests);

  auto one_more = test::sign_event(bob, protocol::room_join_kind, "one more", {{"h", "pasta"}});
  say(c, test::event_frame(one_more));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(one_more, false, "rate-limited: too many membership requests awaiting an answer")});
  CHECK(*asked == max_waiting_self_requests);

  say(c, test::event_frame(test::sign_event(bob, 28934, "", {})));
  CHECK(c.sink->take().empty());
  CHECK(*asked == max_waiting_self_requests + 1);
}

TEST_CASE_METHOD(fixture, "join requests sent before AUTH wait for it, a few of them, for its author only",
                 "[actor][connection][auth]") {
  // Flotilla publishes a visitor's 28934 as the space opens, while welshman authenticates; it
  // never sends a join again and hides an auth-required refusal.
  auto asked = std::make_shared<std::vector<storage::membership_command>>();
  community = system->spawn(recording_community, asked);
  spawned.push_back(community);
  base_policy.members = std::make_shared<member_cache>();
  base_policy.members->set_closed(false);
  auto c = connect(false);
  auto join = test::sign_event(bob, 28934, "", {});
  say(c, test::event_frame(join));
  std::vector<protocol::event> others;
  for (std::size_t i = 1; i <= max_joins_awaiting_auth; ++i) {
    others.push_back(test::sign_event(alice, 28934, "join " + std::to_string(i), {}));
    say(c, test::event_frame(others.back()));
  }
  // Past the bound one is refused at once; the others wait.
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(others.back(), false, "auth-required: authenticate as the author to send this request")});
  CHECK(asked->empty());
  auto auth = test::sign_event(bob, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  // Bob's join goes to the community as if sent now; alice's are not bob's to send.
  REQUIRE(asked->size() == 1);
  CHECK(asked->front().change == storage::membership_change::claim_membership);
  std::vector<std::string> expected{ok_frame(auth, true, "")};
  for (std::size_t i = 0; i + 1 < others.size(); ++i)
    expected.push_back(ok_frame(others[i], false, "restricted: this request may only be sent by its author"));
  CHECK(c.sink->take() == expected);
}

TEST_CASE_METHOD(fixture, "a join request that waited for an AUTH that never came is refused once",
                 "[actor][connection][auth]") {
  auto c = connect(false);
  auto join = test::sign_event(bob, 28934, "", {});
  say(c, test::event_frame(join));
  CHECK(c.sink->take().empty());
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(join, false, "auth-required: authenticate as the author to send this request")});
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take().empty());
}

TEST_CASE_METHOD(fixture, "REQs sent before AUTH wait for it and are answered once it comes",
                 "[actor][connection][auth]") {
  // welshman sends the REQs of every room as the socket opens, authenticates as the challenge
  // arrives, and sends again only the last 50 refused for want of AUTH.
  auto c = connect(true);
  say(c, R"(["REQ","kept",{"kinds":[1]}])");
  say(c, R"(["REQ","closed-meanwhile",{"kinds":[1]}])");
  say(c, R"(["CLOSE","closed-meanwhile"])");
  CHECK(c.sink->take().empty());
  auto auth = test::sign_event(alice, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, R"(["REQ","resent",{"kinds":[7]}])");
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  // welshman sends again the last REQs it saw refused: a retry is answered at once, in the
  // place of the one that waited, so nothing is answered twice.
  say(c, R"(["REQ","resent",{"kinds":[7]}])");
  release_history(); // the fake storage answers queries when told
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("resent")});
  // What it does not send again is answered once the retries' window is over.
  scheduler->trigger_timeouts();
  run();
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("kept")});
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take().empty());
}

TEST_CASE_METHOD(fixture, "REQs waiting for AUTH are bounded as open subscriptions are",
                 "[actor][connection][auth][bounds]") {
  protocol::protocol_limits limits;
  limits.max_subscriptions_per_connection = 2;
  auto c = connect(true, limits);
  say(c, R"(["REQ","a",{}])");
  say(c, R"(["REQ","b",{}])");
  say(c, R"(["REQ","a",{"kinds":[1]}])"); // replaces the one waiting
  say(c, R"(["REQ","c",{}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{R"(["CLOSED","c","auth-required: this community requires authentication"])"});
}

TEST_CASE_METHOD(fixture, "REQs waiting for AUTH share the bounds of the open subscriptions",
                 "[actor][connection][auth][bounds]") {
  protocol::protocol_limits limits;
  limits.max_subscriptions_per_connection = 2;
  auto c = connect(false, limits); // an open community: anonymous readers read, gift wraps wait
  say(c, R"(["REQ","a",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a")});
  say(c, R"(["REQ","wraps",{"kinds":[1059]}])");
  CHECK(c.sink->take().empty()); // waits: one open, one waiting
  say(c, R"(["REQ","more wraps",{"kinds":[1059]}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{R"(["CLOSED","more wraps","auth-required: gift wraps are served to their recipient only; authenticate"])"});
  // A REQ replacing the open subscription of its id does not count that one.
  say(c, R"(["REQ","a",{"kinds":[1059]}])");
  CHECK(c.sink->take().empty());
}
