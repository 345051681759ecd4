// SPDX-License-Identifier: MIT
// The connection actor's queries on CAF's deterministic scheduler: COUNT, the places queries
// wait for, and history replies that arrive late or failed (fixture: connection_fixture.hpp).
#include <catch2/catch.hpp>

#include "connection_fixture.hpp"

using namespace comb;
using namespace comb::actors;
using namespace comb::test_connection;

TEST_CASE_METHOD(fixture, "COUNT answers from storage", "[actor][connection]") {
  store->events.push_back(test::sign_event(alice, 1));
  store->events.push_back(test::sign_event(alice, 1, "two"));
  store->events.push_back(test::sign_event(alice, 7));
  auto c = connect();
  say(c, R"(["COUNT","n",{"kinds":[1]}])");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":2}])"});
}

namespace {

protocol::room_state room_with_flags(std::string id, protocol::room_flags flags) {
  protocol::room_state room;
  room.id = std::move(id);
  room.meta.flags = flags;
  return room;
}

} // namespace

TEST_CASE_METHOD(fixture, "a COUNT taken while a room turned private is counted again without it",
                 "[actor][connection][rooms]") {
  base_policy.members = std::make_shared<member_cache>();
  base_policy.members->set_rooms(
    std::make_shared<const room_index>(std::vector{room_with_flags("lounge", {})}), 1);
  store->events.push_back(test::sign_event(alice, 9, "in the lounge", {{"h", "lounge"}}));
  store->events.push_back(test::sign_event(alice, 9, "elsewhere"));
  auto c = connect();
  caf::anon_send(c.actor, frame_atom_v, std::string(R"(["COUNT","n",{"kinds":[9]}])"));
  scheduler->run_once(); // the connection sends the count; the reader has not counted yet
  protocol::room_flags private_room;
  private_room.is_private = true;
  base_policy.members->set_rooms(
    std::make_shared<const room_index>(std::vector{room_with_flags("lounge", private_room)},
                                       base_policy.members->rooms().get()),
    2);
  run();
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":1}])"});
  CHECK(store->count_calls == 2);
  say(c, R"(["COUNT","m",{"kinds":[9]}])"); // rooms unchanged: counted once
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","m",{"count":1}])"});
  CHECK(store->count_calls == 3);
}

namespace {

/// The pod holds the whole state of the community at `version`, with `rooms`.
void state_at(member_cache& cache, std::int64_t version, std::vector<protocol::room_state> rooms) {
  cache.set_rooms(std::make_shared<const room_index>(std::move(rooms), cache.rooms().get()), version);
  cache.set_version(version);
  cache.set_access_version(version);
}

protocol::room_flags private_flags() {
  protocol::room_flags flags;
  flags.is_private = true;
  return flags;
}

} // namespace

TEST_CASE_METHOD(fixture, "a history reply read past the state the pod holds waits for it and is checked against it",
                 "[actor][connection][rooms]") {
  base_policy.members = std::make_shared<member_cache>();
  state_at(*base_policy.members, 1, {room_with_flags("lounge", {})});
  auto in_room = test::sign_event(alice, 9, "in the lounge", {{"h", "lounge"}});
  auto elsewhere = test::sign_event(alice, 9, "elsewhere");
  auto c = connect();
  say(c, R"(["REQ","s",{"kinds":[9]}])");
  REQUIRE(store->held_queries.size() == 1);
  const auto request = store->held_queries.front();
  // Read after another pod made the lounge private (state 2), which this pod has not loaded.
  storage::query_result read{true, {protocol::render_event_json(in_room), protocol::render_event_json(elsewhere)}, {}};
  read.state_version = 2;
  caf::anon_send(c.actor, history_atom_v, request.subscription_id, request.generation, read);
  run();
  CHECK(c.sink->take().empty());
  CHECK(metrics->replies_awaited.load() == 1);
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take().empty()); // still at state 1: it waits on

  state_at(*base_policy.members, 2, {room_with_flags("lounge", private_flags())});
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take() == std::vector<std::string>{event_on("s", elsewhere), R"(["EOSE","s"])"});

  // A reply read at a state the pod holds goes at once.
  say(c, R"(["REQ","t",{"kinds":[9]}])");
  const auto next = store->held_queries.back();
  caf::anon_send(c.actor, history_atom_v, next.subscription_id, next.generation, read);
  run();
  CHECK(c.sink->take() == std::vector<std::string>{event_on("t", elsewhere), R"(["EOSE","t"])"});
  CHECK(metrics->replies_awaited.load() == 1);
}

TEST_CASE_METHOD(fixture, "a COUNT read past the state the pod holds waits for it and is counted again under it",
                 "[actor][connection][rooms]") {
  base_policy.members = std::make_shared<member_cache>();
  state_at(*base_policy.members, 1, {room_with_flags("lounge", {})});
  store->events.push_back(test::sign_event(alice, 9, "in the lounge", {{"h", "lounge"}}));
  store->events.push_back(test::sign_event(alice, 9, "elsewhere"));
  store->count_read_at = 2;
  auto c = connect();
  say(c, R"(["COUNT","n",{"kinds":[9]}])");
  CHECK(c.sink->take().empty());
  CHECK(store->count_calls == 1);

  state_at(*base_policy.members, 2, {room_with_flags("lounge", private_flags())});
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":1}])"});
  CHECK(store->count_calls == 2); // the rooms it was asked with changed: counted again
}

TEST_CASE_METHOD(fixture, "a reply its pod never caught up with is refused; its places are given back",
                 "[actor][connection][access]") {
  state_wait_seconds = 0; // refused at the first look
  base_policy.max_queries_in_flight = 1;
  base_policy.members = std::make_shared<member_cache>();
  state_at(*base_policy.members, 1, {});
  auto note = test::sign_event(alice, 1, "read past the pod's state");
  store->events.push_back(note);
  store->count_read_at = 2;
  auto c = connect();
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1);
  const auto request = store->held_queries.front();
  store->held_queries.clear();
  storage::query_result read{true, {protocol::render_event_json(note)}, {}};
  read.state_version = 2;
  caf::anon_send(c.actor, history_atom_v, request.subscription_id, request.generation, read);
  run();
  CHECK(c.sink->take().empty());
  scheduler->trigger_timeouts();
  run();
  const std::string not_caught_up =
    "error: this relay has not yet caught up with a change of who may read this community; try again";
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_closed("s", not_caught_up)});
  CHECK(metrics->replies_awaited_too_long.load() == 1);

  // The one query place is free again: a COUNT is read (past the state too, and refused alike).
  say(c, R"(["COUNT","n",{"kinds":[1]}])");
  CHECK(store->count_calls == 1);
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_closed("n", not_caught_up)});
  // Caught up: both are answered.
  state_at(*base_policy.members, 2, {});
  say(c, R"(["COUNT","m",{"kinds":[1]}])");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","m",{"count":1}])"});
  say(c, R"(["REQ","t",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{event_on("t", note), R"(["EOSE","t"])"});
}

TEST_CASE_METHOD(fixture, "a held reply whose subscription ended holds up no other",
                 "[actor][connection][access]") {
  base_policy.members = std::make_shared<member_cache>();
  state_at(*base_policy.members, 1, {});
  auto note = test::sign_event(alice, 1, "a note");
  store->events.push_back(note);
  auto c = connect();
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  const auto request = store->held_queries.front();
  store->held_queries.clear();
  storage::query_result read{true, {protocol::render_event_json(note)}, {}};
  read.state_version = 2;
  read.last = false;
  caf::anon_send(c.actor, history_atom_v, request.subscription_id, request.generation, read);
  run();
  REQUIRE(c.sink->take().empty());
  // The client replaces the REQ: the new one's reply, read at the state the pod holds, goes at
  // once; the old one's held chunk, and the rest of its reply, only give their places back.
  say(c, R"(["REQ","s",{"kinds":[1],"limit":5}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{event_on("s", note), R"(["EOSE","s"])"});
  read.last = true;
  caf::anon_send(c.actor, history_atom_v, request.subscription_id, request.generation, read);
  scheduler->trigger_timeouts();
  run();
  CHECK(c.sink->take().empty());
  CHECK(metrics->replies_awaited_too_long.load() == 0);
}

TEST_CASE_METHOD(fixture, "history rows read before a ban the pod loaded since are not sent",
                 "[actor][connection][bans]") {
  base_policy.bans = std::make_shared<ban_list>();
  auto by_bob = test::sign_event(bob, 1, "bob's, banned while the reply was read");
  auto banned_note = test::sign_event(alice, 1, "an event banned while the reply was read");
  auto kept = test::sign_event(alice, 1, "kept");
  for (const auto& ev : {by_bob, banned_note, kept})
    store->events.push_back(ev);
  auto c = connect();
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1);
  base_policy.bans->set_pubkey(bob.public_key(), true, 0);
  base_policy.bans->set_event(banned_note.id, true, 0);
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{event_on("s", kept), R"(["EOSE","s"])"});
}

TEST_CASE_METHOD(fixture, "a COUNT asks no more than one REQ may hold", "[actor][connection][bounds]") {
  base_policy.max_filter_values = 3;
  base_policy.max_broad_filters = 1;
  auto c = connect();
  say(c, R"(["COUNT","n",{"#t":["a","b","c","d"]}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          R"x(["CLOSED","n","rate-limited: too many filter values in COUNTs under way (at most 3)"])x"});
  say(c, R"(["COUNT","n",{},{}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          R"x(["CLOSED","n","rate-limited: too many filters without ids, authors, kinds or tags (at most 1)"])x"});
  say(c, R"(["COUNT","n",{"#t":["a","b","c"]}])");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":0}])"});
}

TEST_CASE_METHOD(fixture, "REQs beyond the query places wait their turn; one closed meanwhile is skipped",
                 "[actor][connection][bounds]") {
  base_policy.max_queries_in_flight = 2;
  auto c = connect();
  for (const char* sub : {"a", "b", "c", "d"})
    say(c, std::string(R"(["REQ",")") + sub + R"(",{"kinds":[1]}])");
  CHECK(store->held_queries.size() == 2);
  say(c, R"(["CLOSE","c"])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a"), protocol::render_eose("b")});
  REQUIRE(store->held_queries.size() == 1);
  CHECK(store->held_queries.front().subscription_id == "d");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("d")});
  CHECK(metrics->queries_waited.load() == 2);
}

namespace {

/// A connection whose one query place REQ "a" holds (the store keeps it), with a frame budget
/// that lets a burst through.
fixture::client one_place_taken(fixture& f) {
  f.base_policy.max_queries_in_flight = 1;
  f.base_policy.frame_burst = 10'000;
  auto c = f.connect();
  f.say(c, R"(["REQ","a",{"kinds":[1]}])");
  REQUIRE(f.store->held_queries.size() == 1);
  return c;
}

connection_state& state_of(const fixture::client& c) {
  return static_cast<caf::stateful_actor<actors::connection_state>*>(
           caf::actor_cast<caf::abstract_actor*>(c.actor))
    ->state;
}

} // namespace

TEST_CASE_METHOD(fixture, "the COUNTs waiting or being counted ask no more together than one REQ may hold",
                 "[actor][connection][bounds]") {
  base_policy.max_filter_values = 3;
  auto c = one_place_taken(*this);
  say(c, R"(["COUNT","n",{"#t":["a","b"]}])");
  say(c, R"(["COUNT","m",{"#t":["c","d"]}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          R"x(["CLOSED","m","rate-limited: too many filter values in COUNTs under way (at most 3)"])x"});
  release_history(); // REQ "a" ends: "n" is counted and its place in the budget given back
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a"), R"(["COUNT","n",{"count":0}])"});
  say(c, R"(["COUNT","m",{"#t":["c","d"]}])");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","m",{"count":0}])"});
}

TEST_CASE_METHOD(fixture, "a REQ closed or refused while it waits is not kept", "[actor][connection][bounds]") {
  auto c = one_place_taken(*this);
  // Fresh ids each time, closed at once: before, each one's filters stayed queued behind "a".
  for (int i = 0; i < 200; ++i) {
    auto id = "x" + std::to_string(i);
    say(c, R"(["REQ",")" + id + R"(",{"kinds":[1],"#t":["a","b","c"]}])");
    say(c, R"(["CLOSE",")" + id + R"("])");
  }
  say(c, R"(["REQ","b",{"kinds":[1]}])");
  CHECK(state_of(c).waiting_queries.size() == 1);
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a")});
  REQUIRE(store->held_queries.size() == 1);
  CHECK(store->held_queries.front().subscription_id == "b");
}

TEST_CASE_METHOD(fixture, "a reply read before the reader was removed is not sent after it",
                 "[actor][connection][access]") {
  alice_the_only_member(true);
  store->events.push_back(test::sign_event(alice, 1, "history"));
  auto c = connect(true);
  auto auth = authenticate(c, alice);
  REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1);
  // Removed while the reader works; the revocation never reaches this subscription.
  (void)base_policy.members->replace({});
  release_history();
  CHECK(c.sink->take()
        == std::vector<std::string>{R"(["CLOSED","s","restricted: you are not a member of this community"])"});

  // A COUNT counted before the removal is not answered after it either.
  (void)base_policy.members->replace({{alice.public_key(), storage::member_role::member}});
  caf::anon_send(c.actor, frame_atom_v, std::string(R"(["COUNT","n",{"kinds":[1]}])"));
  scheduler->run_once(); // the connection sends the COUNT to the reader
  (void)base_policy.members->replace({});
  run();
  CHECK(c.sink->take()
        == std::vector<std::string>{R"(["CLOSED","n","restricted: you are not a member of this community"])"});
}

TEST_CASE_METHOD(fixture, "a failed history reply closes only the subscription it was for",
                 "[actor][connection]") {
  auto c = connect();
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  REQUIRE(store->held_queries.size() == 1);
  auto first = store->held_queries.front();
  store->held_queries.clear();
  say(c, R"(["REQ","s",{"kinds":[7]}])"); // the same id, a new REQ
  release_history();
  REQUIRE(c.sink->take() == std::vector<std::string>{R"(["EOSE","s"])"});
  // The first REQ's reader gives up late: the newer subscription stays.
  caf::anon_send(c.actor, history_atom_v, first.subscription_id, first.generation,
                 storage::query_result{false, {}, "error: statement timeout"});
  run();
  CHECK(c.sink->take().empty());
  auto note = test::sign_event(alice, 7);
  say(c, test::event_frame(note));
  CHECK(c.sink->take() == std::vector<std::string>{ok_frame(note, true, ""), event_on("s", note)});
}

TEST_CASE_METHOD(fixture, "while the pod's readers hold their bound, REQs and COUNTs wait their turn, not refused",
                 "[actor][connection][bounds]") {
  readers_waiting = std::make_shared<reader_waits>(1);
  for (std::uint32_t i = 0; i < reader_waits::max_queued_per_reader; ++i)
    readers_waiting->queued(0); // others' queries, not yet answered
  auto first = connect();
  auto second = connect();
  say(first, R"(["COUNT","m",{"kinds":[1]}])");
  say(first, R"(["REQ","r",{"kinds":[1]}])");
  say(second, R"(["COUNT","n",{"kinds":[1]}])");
  CHECK(first.sink->take().empty());
  CHECK(second.sink->take().empty());
  CHECK(store->count_calls == 0);
  CHECK(readers_waiting->waiters() == 2); // each connection once, in arrival order
  CHECK(metrics->queries_waited.load() == 2);
  CHECK(metrics->queries_refused.load() == 0);

  // A reader ends a query: the connection that waited first starts its COUNT, which fills the
  // readers again, so its REQ waits once more, behind the other connection.
  readers_waiting->answered(0);
  run();
  CHECK(first.sink->take() == std::vector<std::string>{R"(["COUNT","m",{"count":0}])"});
  CHECK(second.sink->take().empty());
  CHECK(readers_waiting->waiters() == 2);
  readers_waiting->answered(0);
  run();
  CHECK(second.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":0}])"});
  CHECK(store->held_queries.empty());
  CHECK(readers_waiting->waiters() == 1);
  readers_waiting->answered(0);
  run();
  REQUIRE(store->held_queries.size() == 1);
  release_history();
  CHECK(first.sink->take() == std::vector<std::string>{R"(["EOSE","r"])"});
  CHECK(readers_waiting->waiters() == 0);
  // Each query waited once (the REQ behind the COUNT, after it); the REQ counts at its reader
  // from its start, before the fan-out has passed it on.
  CHECK(metrics->queries_waited.load() == 3);
  CHECK(readers_waiting->queued_total() == reader_waits::max_queued_per_reader);
  CHECK(metrics->queries_refused.load() == 0);
}

TEST_CASE_METHOD(fixture, "a connection that ends while it waits for the readers passes its turn on",
                 "[actor][connection][bounds]") {
  readers_waiting = std::make_shared<reader_waits>(1);
  for (std::uint32_t i = 0; i < reader_waits::max_queued_per_reader; ++i)
    readers_waiting->queued(0);
  auto leaving = connect();
  auto staying = connect();
  say(leaving, R"(["REQ","a",{"kinds":[1]}])");
  say(staying, R"(["REQ","b",{"kinds":[1]}])");
  CHECK(readers_waiting->waiters() == 2);
  caf::anon_send(leaving.actor, hangup_atom_v);
  run();
  CHECK(readers_waiting->waiters() == 1); // it left the queue as it ended
  readers_waiting->answered(0);
  run();
  CHECK(store->held_queries.size() == 1);
  release_history();
  CHECK(staying.sink->take() == std::vector<std::string>{R"(["EOSE","b"])"});
}

namespace {

/// Actors that note each resume_atom they get, on CAF's deterministic scheduler.
struct wake_recorder : comb::test::test_system {
  std::shared_ptr<std::vector<int>> woken = std::make_shared<std::vector<int>>();
  std::vector<caf::actor> actors;

  ~wake_recorder() {
    for (auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    scheduler->run();
  }
  caf::actor waiter(int n) {
    actors.push_back(system->spawn([w = woken, n](caf::event_based_actor*) -> caf::behavior {
      return {[w, n](resume_atom) { w->push_back(n); }};
    }));
    return actors.back();
  }
};

void fill(reader_waits& waits) {
  for (std::uint32_t i = 0; i < reader_waits::max_queued_per_reader; ++i)
    waits.queued(0);
}

} // namespace

TEST_CASE("a wake-up sent to a connection that then ended goes to the next waiter", "[actors][bounds]") {
  wake_recorder r;
  auto gone = r.waiter(1);
  auto next = r.waiter(2);
  reader_waits waits(1);
  fill(waits);
  waits.wait_for_room(gone);
  waits.wait_for_room(next);
  waits.answered(0); // wakes `gone`, which ends before reading it
  waits.leave(gone.address());
  r.scheduler->run();
  CHECK(*r.woken == std::vector<int>{1, 2});
  CHECK(waits.waiters() == 0);
}

TEST_CASE("the room a reader frees is kept for the woken connection, not taken by a newcomer",
          "[actors][bounds]") {
  wake_recorder r;
  reader_waits waits(1);
  fill(waits);
  waits.wait_for_room(r.waiter(1));
  waits.answered(0);
  CHECK(waits.full()); // a REQ arriving now on another connection queues behind the woken one
  waits.resumed();
  CHECK_FALSE(waits.full());
  r.scheduler->run();
  CHECK(*r.woken == std::vector<int>{1});
}

TEST_CASE("a connection that asks to wait after the readers emptied is woken at once", "[actors][bounds]") {
  wake_recorder r;
  reader_waits waits(1);
  // It saw the readers full; they ended every query before it asked, with nobody to wake.
  waits.wait_for_room(r.waiter(1));
  r.scheduler->run();
  CHECK(*r.woken == std::vector<int>{1});
  CHECK(waits.waiters() == 0);
}

TEST_CASE_METHOD(fixture, "a COUNT refused under the id of an open REQ ends that REQ: CLOSED means closed",
                 "[actor][connection]") {
  auto c = connect(false); // an open community: anonymous readers read, gift wraps need AUTH
  say(c, R"(["REQ","x",{"kinds":[1]}])");
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("x")});
  REQUIRE(state_of(c).logic->subscription_count() == 1);
  say(c, R"(["COUNT","x",{"kinds":[1059]}])");
  auto closed = c.sink->take();
  REQUIRE(closed.size() == 1);
  CHECK(closed.front().rfind(R"(["CLOSED","x","auth-required: )", 0) == 0);
  CHECK(state_of(c).logic->subscription_count() == 0);
}

TEST_CASE_METHOD(fixture, "a REQ ended by a malformed REQ of its id is not kept", "[actor][connection][bounds]") {
  auto c = one_place_taken(*this);
  // Fresh ids each time, each ended by a REQ that does not parse: before, each one's start time
  // stayed in the connection for good, and its filters in the queue.
  for (int i = 0; i < 200; ++i) {
    auto id = "x" + std::to_string(i);
    say(c, R"(["REQ",")" + id + R"(",{"kinds":[1]}])");
    say(c, R"(["REQ",")" + id + R"(",{"kinds":"not a list"}])");
  }
  CHECK(state_of(c).queries_under_way.size() == 1);
  CHECK(state_of(c).waiting_queries.empty());
  auto frames = c.sink->take();
  REQUIRE(frames.size() == 200);
  CHECK(frames.back().rfind(R"(["CLOSED","x199",)", 0) == 0);
  release_history();
  CHECK(c.sink->take() == std::vector<std::string>{protocol::render_eose("a")});
}
