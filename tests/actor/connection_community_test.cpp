// SPDX-License-Identifier: MIT
// The connection actor with its community: access that changes while a connection is open, the
// membership and room requests it may have waiting, and what waits for AUTH (joins and REQs)
// (fixture: connection_fixture.hpp).
#include <catch2/catch.hpp>

#include "connection_fixture.hpp"
#include "actors/community/membership_requests.hpp"
#include "actors/community/room_queue.hpp"

using namespace comb;
using namespace comb::actors;
using namespace comb::test_connection;

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
  alice_the_only_member(false);
  auto c = connect(false); // open when it connected
  auto auth = authenticate(c, alice);
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  base_policy.members->set_closed(true); // comb-admin closed it; the member's socket stays

  // A member's socket carries no non-member's event in.
  auto from_bob = test::sign_event(bob, 1, "not a member");
  say(c, test::event_frame(from_bob));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(from_bob, false, "restricted: the author of this event is not a member of this community")});
  CHECK(store->store_calls == 0);

  // Nor does a join without an invite code, from a socket opened while it was open (a
  // connection is authenticated as one key: another AUTH on this one is refused).
  auto bob_auth = authenticate(c, bob);
  REQUIRE(c.sink->take()
          == std::vector<std::string>{ok_frame(bob_auth, false, "restricted: this connection is authenticated as"
                                                                " another key; open another connection for this one")});
  auto b = connect(false);
  bob_auth = authenticate(b, bob);
  REQUIRE(b.sink->take() == std::vector<std::string>{ok_frame(bob_auth, true, "")});
  auto join = test::sign_event(bob, 28934, "", {});
  say(b, test::event_frame(join));
  CHECK(b.sink->take()
        == std::vector<std::string>{
          ok_frame(join, false, "restricted: a join request needs a claim tag with an invite code")});
  CHECK(asked->empty());

  // Reopened: a join needs no code again.
  base_policy.members->set_closed(false);
  auto open_join = test::sign_event(bob, 28934, "again", {});
  say(b, test::event_frame(open_join));
  REQUIRE(asked->size() == 1);
  CHECK(asked->front().change == storage::membership_change::claim_membership);
}

TEST_CASE_METHOD(fixture, "a member removed from a closed community is sent none of what waited in its queue",
                 "[actor][connection][access]") {
  alice_the_only_member(true);
  auto c = connect(true);
  auto auth = authenticate(c, alice);
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

TEST_CASE_METHOD(fixture, "a member removed from a closed community stops the readers of its history replies",
                 "[actor][connection][access]") {
  alice_the_only_member(true);
  auto c = connect(true);
  auto auth = authenticate(c, alice);
  say(c, R"(["REQ","feed",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1);
  auto ended = store->held_queries.front().ended;
  REQUIRE(ended);
  CHECK_FALSE(ended->load());
  (void)base_policy.members->replace({});
  caf::anon_send(c.actor, revoke_atom_v, std::int64_t{1}, pubkey_list{alice.public_key()});
  run();
  CHECK(ended->load());
}

TEST_CASE_METHOD(fixture, "a connection has only a few joins and leaves waiting, other requests still go",
                 "[actor][connection][bounds]") {
  auto asked = std::make_shared<std::vector<storage::membership_command>>();
  community = system->spawn(recording_community, asked); // never answers: every request waits
  spawned.push_back(community);
  base_policy.members = std::make_shared<member_cache>();
  base_policy.members->set_closed(false);
  auto c = connect(false);
  auto auth = authenticate(c, bob);
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
  // A 9031 naming its own author is a leave, which anyone may send: it counts as one.
  auto own_removal = test::sign_event(bob, 9031, "", {{"p", protocol::to_hex(bob.public_key())},
                                                      {"relay", "wss://hive.test"}});
  say(c, test::event_frame(own_removal));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(own_removal, false, "rate-limited: too many membership requests awaiting an answer")});
  CHECK(asked->size() == max_waiting_self_requests);

  // bob manages the community: his request for someone else still goes.
  (void)base_policy.members->replace({{bob.public_key(), storage::member_role::admin}});
  auto add = test::sign_event(bob, 9030, "", {{"p", protocol::to_hex(alice.public_key())},
                                               {"relay", "wss://hive.test"}});
  say(c, test::event_frame(add));
  CHECK(c.sink->take().empty());
  REQUIRE(asked->size() == max_waiting_self_requests + 1);
  CHECK(asked->back().change == storage::membership_change::add_member);
}

TEST_CASE_METHOD(fixture, "9030-9032 from someone who does not manage the community never reach its queue",
                 "[actor][connection][bounds]") {
  // The community's queue keeps places for its owner and admins: requests that name someone
  // else than their author take them, and the database would refuse these anyway.
  auto asked = std::make_shared<std::vector<storage::membership_command>>();
  community = system->spawn(recording_community, asked);
  spawned.push_back(community);
  base_policy.members = std::make_shared<member_cache>();
  base_policy.members->set_closed(false);
  (void)base_policy.members->replace({{bob.public_key(), storage::member_role::member}});
  auto c = connect(false);
  auto auth = authenticate(c, bob);
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  const auto alice_hex = protocol::to_hex(alice.public_key());
  for (std::uint32_t kind : {9030u, 9031u, 9032u}) {
    auto request = test::sign_event(bob, kind, "", {{"p", alice_hex}, {"role", "member"},
                                                     {"relay", "wss://hive.test"}});
    say(c, test::event_frame(request));
    CHECK(c.sink->take() == std::vector<std::string>{ok_frame(request, false, "restricted: your role does not allow this")});
  }
  CHECK(asked->empty());
  // A 9031 naming its own author is a leave: the database takes it from anyone.
  auto leave = test::sign_event(bob, 9031, "", {{"p", protocol::to_hex(bob.public_key())},
                                                 {"relay", "wss://hive.test"}});
  say(c, test::event_frame(leave));
  CHECK(c.sink->take().empty());
  REQUIRE(asked->size() == 1);
  CHECK(asked->back().change == storage::membership_change::remove_member);
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

TEST_CASE_METHOD(fixture, "membership and room requests draw on their address's request bucket, over its sockets",
                 "[actor][connection][bounds]") {
  // Each costs the store a transaction: from many sockets one address would otherwise keep the
  // community's membership queue busy within every per-connection bound.
  auto asked = std::make_shared<std::vector<storage::membership_command>>();
  community = system->spawn(recording_community, asked);
  spawned.push_back(community);
  ip_limits limits;
  limits.request_rate = 0.001; // nothing comes back during the test
  limits.request_burst = 2;
  base_policy.ip = std::make_shared<ip_budget>(limits);
  base_policy.members = std::make_shared<member_cache>();
  (void)base_policy.members->replace({{bob.public_key(), storage::member_role::admin}});
  base_policy.members->set_closed(false);
  auto add = [&](const client& c, const char* note) {
    auto ev = test::sign_event(bob, 9030, note, {{"p", protocol::to_hex(protocol::key_pair::generate().public_key())},
                                                 {"relay", "wss://hive.test"}});
    say(c, test::event_frame(ev));
    return ev;
  };
  auto first = connect(false), second = connect(false);
  for (const auto* c : {&first, &second}) {
    auto auth = authenticate(*c, bob);
    REQUIRE(c->sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  }
  (void)add(first, "one");
  (void)add(second, "two");
  CHECK(first.sink->take().empty());
  CHECK(second.sink->take().empty());
  CHECK(asked->size() == 2);

  const std::string refusal = "rate-limited: too many membership and room requests from your address; try again shortly";
  auto third = add(first, "three");
  CHECK(first.sink->take() == std::vector<std::string>{ok_frame(third, false, refusal)});
  auto join = test::sign_event(bob, 28934, "", {});
  say(second, test::event_frame(join));
  CHECK(second.sink->take() == std::vector<std::string>{ok_frame(join, false, refusal)});
  // A room join goes to the same queue, and the same bucket.
  auto room_join = test::sign_event(bob, protocol::room_join_kind, "", {{"h", "pizza"}});
  say(first, test::event_frame(room_join));
  CHECK(first.sink->take() == std::vector<std::string>{ok_frame(room_join, false, refusal)});
  CHECK(asked->size() == 2);
  CHECK(metrics->store_requests_rate_limited.load() == 3);
}

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
  auto auth = authenticate(c, bob);
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
  auto auth = authenticate(c, bob);
  // Bob's join goes to the community as if sent now; alice's are not bob's to send.
  REQUIRE(asked->size() == 1);
  CHECK(asked->front().change == storage::membership_change::claim_membership);
  std::vector<std::string> expected{ok_frame(auth, true, "")};
  for (std::size_t i = 0; i + 1 < others.size(); ++i)
    expected.push_back(ok_frame(others[i], false, "restricted: this request may only be sent by its author"));
  CHECK(c.sink->take() == expected);
}

TEST_CASE_METHOD(fixture, "a join request larger than a real one does not wait for AUTH",
                 "[actor][connection][auth]") {
  // It waits before its signature is checked: strings of empty tags would hold far more than
  // the frame's size for the grace.
  auto c = connect(false);
  auto padded = test::sign_event(bob, 28934, "", {protocol::tag(4000, "")});
  say(c, test::event_frame(padded));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          ok_frame(padded, false, "auth-required: authenticate as the author to send this request")});
}

TEST_CASE_METHOD(fixture, "a join request that waited for an AUTH that never came is refused once",
                 "[actor][connection][auth]") {
  auto c = connect(false);
  auto join = test::sign_event(bob, 28934, "", {});
  say(c, test::event_frame(join));
  CHECK(c.sink->take().empty());
  // welshman never sends a join again: it waits past auth_grace, for a slow signer's AUTH.
  scheduler->trigger_timeouts();
  run();
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

TEST_CASE_METHOD(fixture, "a REQ sent while a join waits for AUTH does not start the wait again",
                 "[actor][connection][auth]") {
  auto c = connect(true);
  auto join = test::sign_event(bob, 28934, "", {});
  say(c, test::event_frame(join));
  scheduler->trigger_timeouts(); // auth_grace: the join waits on to auth_grace_when_lost
  run();
  CHECK(c.sink->take().empty());
  say(c, R"(["REQ","late",{"kinds":[1]}])");
  CHECK(c.sink->take().empty());
  // The join's wait ends at auth_grace_when_lost, the REQ's with it: one more timer, not a new
  // grace and a new extension after it.
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take().size() == 2);
}

TEST_CASE_METHOD(fixture, "REQs sent before AUTH wait for it and are answered once it comes",
                 "[actor][connection][auth]") {
  // welshman sends the REQs of every room as the socket opens, authenticates as the challenge
  // arrives, and after its OK sends again only the last 51 messages it sent.
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

TEST_CASE_METHOD(fixture, "more REQs than welshman sends again wait longer for a slow AUTH",
                 "[actor][connection][auth]") {
  // Flotilla opens three REQs per room before AUTH; after the AUTH's OK welshman sends again only
  // the last 51 messages, so the first ones, refused at auth_grace, were lost for the session.
  auto wait_then_answer = [&](std::size_t reqs, bool authenticates) {
    auto c = connect(true);
    for (std::size_t i = 0; i < reqs; ++i)
      say(c, R"(["REQ","r)" + std::to_string(i) + R"(",{"kinds":[1]}])");
    CHECK(c.sink->take().empty());
    scheduler->trigger_timeouts(); // auth_grace
    run();
    auto refused = c.sink->take();
    if (reqs <= welshman_resent) {
      CHECK(refused.size() == reqs); // all of them are sent again: refused as before
      return;
    }
    CHECK(refused.empty());
    if (authenticates) {
      auto auth = test::sign_event(alice, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
      say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
      CHECK(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
    }
    scheduler->trigger_timeouts(); // auth_grace_when_lost, or the retries' window after the AUTH
    run();
    std::vector<std::string> answers;
    for (std::size_t round = 0; round < reqs && answers.size() < reqs; ++round) { // 8 queries at once
      release_history();
      run();
      for (auto& frame : c.sink->take())
        answers.push_back(std::move(frame));
    }
    REQUIRE(answers.size() == reqs);
    CHECK(answers.front()
          == (authenticates ? protocol::render_eose("r0")
                            : R"(["CLOSED","r0","auth-required: this community requires authentication"])"));
  };
  SECTION("as many as welshman sends again") { wait_then_answer(welshman_resent, false); }
  SECTION("more, and the AUTH comes late") { wait_then_answer(welshman_resent + 1, true); }
  SECTION("more, and no AUTH comes") { wait_then_answer(welshman_resent + 1, false); }
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

TEST_CASE_METHOD(fixture, "REQs opened while others wait for AUTH count the waiting ones as open",
                 "[actor][connection][auth][bounds]") {
  protocol::protocol_limits limits;
  limits.max_subscriptions_per_connection = 2;
  base_policy.max_filter_values = 4;
  auto c = connect(false, limits); // an open community: anonymous readers read, gift wraps wait
  say(c, R"(["REQ","wraps",{"kinds":[1059],"#t":["x","y"]}])");
  CHECK(c.sink->take().empty()); // waits for AUTH
  // Its values count: three of four are held.
  say(c, R"(["REQ","a",{"kinds":[1,7]}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("a", "rate-limited: too many filter values open on this connection (at most 4)")});
  say(c, R"(["REQ","a",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a")});
  // And its place: one open, one waiting.
  say(c, R"(["REQ","b",{}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{protocol::render_closed("b", "rate-limited: too many open subscriptions (at most 2)")});
  // A REQ of the waiting one's id takes its place instead.
  say(c, R"(["REQ","wraps",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("wraps")});
}

TEST_CASE_METHOD(fixture, "EOSEs sent while welshman authenticated are sent again once it sends its requests again",
                 "[actor][connection][auth]") {
  auto c = connect(false); // an open community: anonymous readers read at once
  for (const char* id : {"a", "b", "c"}) {
    say(c, std::string(R"(["REQ",")") + id + R"(",{"kinds":[1]}])");
    release_history();
  }
  CHECK(c.sink->take()
        == std::vector<std::string>{protocol::render_eose("a"), protocol::render_eose("b"), protocol::render_eose("c")});
  say(c, R"(["CLOSE","b"])");
  auto auth = authenticate(c, alice);
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  // welshman read the OK and sends again the last messages it sent: "c". The others whose EOSE
  // reached it while it authenticated end now; "c" ends with its own answer.
  say(c, R"(["REQ","c",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a"), protocol::render_eose("c")});
  CHECK(metrics->eoses_resent_after_auth == 1);
  // Once only.
  say(c, R"(["REQ","a",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a")});
  CHECK(metrics->eoses_resent_after_auth == 1);
}

TEST_CASE_METHOD(fixture, "a client that sends nothing again after its AUTH gets no second EOSE",
                 "[actor][connection][auth]") {
  auto c = connect(false);
  say(c, R"(["REQ","a",{"kinds":[1]}])");
  release_history();
  auto auth = authenticate(c, alice);
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a"), ok_frame(auth, true, "")});
  say(c, R"(["REQ","new",{"kinds":[1]}])"); // nostr-tools: a new id
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("new")});
  CHECK(metrics->eoses_resent_after_auth == 0);
}

TEST_CASE_METHOD(fixture, "a room request its author's roles do not allow is refused before it takes a place",
                 "[actor][connection][bounds]") {
  // Each request the community's room queue takes costs a transaction, refusals too: one key
  // sending creates and puts it may not make would crowd out everyone's joins.
  auto asked = std::make_shared<std::size_t>(0);
  community = system->spawn(recording_rooms, asked);
  spawned.push_back(community);
  const auto carol = protocol::key_pair::generate(); // the room's moderator
  const auto dave = protocol::key_pair::generate();  // in the room, no role
  const auto erin = protocol::key_pair::generate();  // the room's admin, a plain community member
  base_policy.members = std::make_shared<member_cache>();
  (void)base_policy.members->replace({{alice.public_key(), storage::member_role::admin},
                                      {bob.public_key(), storage::member_role::member},
                                      {carol.public_key(), storage::member_role::member},
                                      {dave.public_key(), storage::member_role::member},
                                      {erin.public_key(), storage::member_role::member}});
  base_policy.members->set_closed(false);
  protocol::room_state pizza;
  pizza.exists = true;
  pizza.id = "pizza";
  pizza.members = {{carol.public_key(), {"moderator"}}, {dave.public_key(), {}}, {erin.public_key(), {"admin"}}};
  base_policy.members->set_rooms(std::make_shared<const room_index>(std::vector{pizza}), 1);
  auto as = [&](const protocol::key_pair& who) {
    auto c = connect(false);
    auto auth = authenticate(c, who);
    REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
    return c;
  };
  auto refused = [&](const fixture::client& c, const protocol::event& request, const std::string& why) {
    say(c, test::event_frame(request));
    CHECK(c.sink->take() == std::vector<std::string>{ok_frame(request, false, why)});
  };
  const std::string not_allowed = "restricted: your role does not allow this in this room";
  const std::string newcomer = protocol::to_hex(protocol::key_pair::generate().public_key());

  auto member = as(bob);
  refused(member, test::sign_event(bob, protocol::room_create_kind, "", {{"h", "salad"}}), not_allowed);
  // Flotilla's room form creates before it edits, and goes on only when told "already".
  refused(member, test::sign_event(bob, protocol::room_create_kind, "", {{"h", "pizza"}}),
          "duplicate: a room with this id already exists");
  refused(member, test::sign_event(bob, protocol::room_put_user_kind, "", {{"h", "pizza"}, {"p", newcomer}}),
          not_allowed);
  auto plain = as(dave);
  refused(plain, test::sign_event(dave, protocol::room_put_user_kind, "", {{"h", "pizza"}, {"p", newcomer}}),
          not_allowed);
  auto moderator = as(carol);
  refused(moderator, test::sign_event(carol, protocol::room_edit_metadata_kind, "", {{"h", "pizza"}, {"name", "Pie"}}),
          not_allowed);
  // Anyone may join, but not with a padded request that would fill the queue's bytes.
  refused(member, test::sign_event(bob, protocol::room_join_kind, std::string(max_room_request_bytes, 'x'), {{"h", "pizza"}}),
          "invalid: a room request may be at most 64 KiB");
  CHECK(*asked == 0);
  CHECK(metrics->room_requests_refused_early == 6);
  // Refused, so not counted as accepted: a flood of them is seen as what it is.
  CHECK(metrics->events_accepted == 0);
  CHECK(metrics->events_rejected == 6);

  // Flotilla's room form, from the room's admin: the create is told "already", the edit goes on.
  auto room_admin = as(erin);
  refused(room_admin, test::sign_event(erin, protocol::room_create_kind, "", {{"h", "pizza"}}),
          "duplicate: a room with this id already exists");
  CHECK(metrics->room_requests_refused_early == 7);

  // Those the cache says may go to the community, whose transaction decides.
  say(room_admin, test::event_frame(test::sign_event(erin, protocol::room_edit_metadata_kind, "", {{"h", "pizza"}, {"name", "Pie"}})));
  say(moderator, test::event_frame(test::sign_event(carol, protocol::room_put_user_kind, "", {{"h", "pizza"}, {"p", newcomer}})));
  say(moderator, test::event_frame(test::sign_event(carol, protocol::room_delete_event_kind, "", {{"h", "pizza"}, {"e", std::string(64, 'a')}})));
  auto admin = as(alice);
  say(admin, test::event_frame(test::sign_event(alice, protocol::room_create_kind, "", {{"h", "salad"}})));
  say(member, test::event_frame(test::sign_event(bob, protocol::room_join_kind, "", {{"h", "pizza"}})));
  CHECK(*asked == 5);
  CHECK(metrics->room_requests_refused_early == 7);
  CHECK(metrics->events_accepted == 5);
  CHECK(metrics->events_rejected == 7);
}
