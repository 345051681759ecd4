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
  const auto weight = storage_waiting_weight(protocol::render_event_json(first), first);
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

TEST_CASE_METHOD(fixture, "one connection's events waiting for its writer are bounded in bytes, its share of the pod's bound",
                 "[actor][connection][bounds]") {
  store->hold_writes = true;
  auto first = test::sign_event(alice, 1, "first");
  auto second = test::sign_event(alice, 1, "second");
  const auto weight = storage_waiting_weight(protocol::render_event_json(first), first);
  base_policy.max_storage_bytes_in_flight = weight + weight / 2;
  auto c = connect();
  say(c, test::event_frame(first));
  say(c, test::event_frame(second));
  CHECK(store->store_calls == 1);
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(second, false, "rate-limited: too many events awaiting storage")});
  // The writer answers the first: its weight is given back, the second fits.
  REQUIRE(store->held_writes.size() == 1);
  const auto& route = store->held_writes.front();
  route.sink->send(protocol::render_ok(route.event_id_hex, true, ""));
  route.answered->fetch_add(1, std::memory_order_release);
  say(c, test::event_frame(second));
  CHECK(store->store_calls == 2);
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(first, true, "")});
}

TEST_CASE_METHOD(fixture, "the events of one address waiting for the writers are bounded over its sockets",
                 "[actor][connection][bounds]") {
  // Sixteen sockets at their own share filled the pod's bound, and every other client's events
  // were refused while the writers worked through them.
  store->hold_writes = true;
  auto first = test::sign_event(alice, 1, "first");
  auto second = test::sign_event(alice, 1, "second");
  auto third = test::sign_event(alice, 1, "third");
  auto weight_of = [](const protocol::event& ev) { return storage_waiting_weight(protocol::render_event_json(ev), ev); };
  auto address = std::make_shared<ip_budget>(ip_limits{});
  base_policy.ip = address;
  base_policy.max_storage_bytes_per_address = weight_of(first) + weight_of(second) + weight_of(third) / 2;
  auto a = connect();
  auto b = connect();
  say(a, test::event_frame(first));
  say(b, test::event_frame(second));
  say(a, test::event_frame(third));
  CHECK(store->store_calls == 2);
  CHECK(a.sink->take()
        == std::vector<std::string>{ok_frame(
          third, false, "rate-limited: too many events from your address wait to be stored; try again shortly")});
  CHECK(metrics->events_refused_address_storage == 1);
  CHECK(address->storage_held() == weight_of(first) + weight_of(second));
  // Answered (or dropped with a failed writer), a route gives its weight back to the address.
  store->held_writes.erase(store->held_writes.begin());
  CHECK(address->storage_held() == weight_of(second));
  say(a, test::event_frame(third));
  CHECK(store->store_calls == 3);
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

TEST_CASE_METHOD(fixture, "a replaced or closed REQ tells the reader of its history to stop",
                 "[actor][connection][req]") {
  auto reader = connect();
  say(reader, R"(["REQ","s",{"kinds":[1]}])");
  say(reader, R"(["REQ","s",{"kinds":[7]}])");
  REQUIRE(store->held_queries.size() == 2);
  auto first = store->held_queries[0].ended;
  auto second = store->held_queries[1].ended;
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->load());
  CHECK_FALSE(second->load());
  say(reader, R"(["CLOSE","s"])");
  CHECK(second->load());
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

  auto auth = authenticate(c, alice);
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

TEST_CASE_METHOD(fixture, "a large frame refused before it is parsed still gets its OK or CLOSED",
                 "[actor][connection][bounds]") {
  // A contact list or a members page's profile load is often past 16 KiB: the apps wait for
  // the OK or CLOSED, and welshman keeps a REQ pending (its socket never idle) without one.
  base_policy.frame_rate = 0.001;
  base_policy.frame_burst = 1.5;
  auto c = connect();
  say(c, R"(["REQ","first",{"kinds":[1]}])"); // the bucket's last whole token
  c.sink->take();
  std::vector<protocol::tag> follows;
  for (int i = 0; i < 400; ++i)
    follows.push_back({"p", std::string(64, "0123456789abcdef"[i % 16])});
  auto contacts = test::sign_event(alice, 3, "", follows);
  say(c, test::event_frame(contacts));
  std::string authors;
  for (int i = 0; i < 400; ++i)
    authors += (i ? ",\"" : "\"") + std::string(64, 'a') + "\"";
  say(c, R"(["REQ","members",{"kinds":[0],"authors":[)" + authors + "]}]");
  const std::string why = "rate-limited: slow down, too many messages on this connection";
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(contacts, false, why),
                                                   protocol::render_closed("members", why)});
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

TEST_CASE_METHOD(fixture, "a draining connection serves what it is asked, then closes with 1001 once all is answered",
                 "[actor][connection][drain]") {
  store->hold_writes = true;
  auto idle = connect();
  auto busy = connect();
  auto in_flight = test::sign_event(alice, 1, "in flight at the signal");
  say(busy, test::event_frame(in_flight));
  say(busy, R"(["REQ","feed",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1);
  REQUIRE(store->held_writes.size() == 1);

  caf::anon_send(idle.actor, drain_atom_v);
  caf::anon_send(busy.actor, drain_atom_v);
  run();
  CHECK(idle.sink->closed() == close_reason::going_away); // nothing to answer: closed at once
  CHECK_FALSE(busy.sink->closed());

  // Frames read meanwhile are served, not refused: the apps do not send again what is refused.
  auto late = test::sign_event(alice, 1, "sent after the signal");
  say(busy, test::event_frame(late));
  CHECK(store->store_calls == 2);
  CHECK(busy.sink->take().empty());

  // The writer answers both on the socket; the history query is still open: not closed yet.
  for (const auto& route : store->held_writes) {
    route.sink->send(protocol::render_ok(route.event_id_hex, true, ""));
    route.answered->fetch_add(1, std::memory_order_release);
  }
  scheduler->trigger_timeouts();
  run();
  CHECK_FALSE(busy.sink->closed());

  release_history();
  scheduler->trigger_timeouts();
  run();
  CHECK(busy.sink->closed() == close_reason::going_away);
  CHECK(busy.sink->take()
        == std::vector<std::string>{ok_frame(in_flight, true, ""), ok_frame(late, true, ""), R"(["EOSE","feed"])"});
}
