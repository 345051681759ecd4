// SPDX-License-Identifier: MIT
// The connection actor and the fan-out on CAF's deterministic scheduler, with a fake storage
// actor that answers from memory and releases history replies only when the test says so.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>
#include <mutex>

#include "actors/community/ban_list.hpp"
#include "actors/connection/connection_actor.hpp"
#include "actors/fanout/fanout_actor.hpp"
#include "actors/messages.hpp"
#include "protocol/nip42.hpp"
#include "protocol/relay_message.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using namespace comb::actors;

namespace {

using release_atom = caf::atom_constant<caf::atom("release")>;

/// Records what a connection would write to its socket.
class recording_sink final : public frame_sink {
public:
  void send(std::string frame) override {
    std::lock_guard lock(mutex_);
    frames_.push_back(std::move(frame));
  }
  void close(close_reason why) override { closed_ = why; }

  std::vector<std::string> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(frames_, {});
  }

private:
  std::mutex mutex_;
  std::vector<std::string> frames_;
  std::optional<close_reason> closed_;
};

/// What the fake storage holds and has been asked.
struct fake_store {
  std::vector<protocol::event> events;
  std::vector<history_request> held_queries;
  int store_calls = 0;
  caf::actor fanout; ///< told about each stored event, as the real writer does
  bool hold_writes = false;      ///< store requests wait in held_writes, unanswered
  std::vector<ok_route> held_writes;
};

/// Answers like the storage writer and a reader: stores in memory (duplicates noticed),
/// queries with real filter matching, and holds each history reply until `release`.
caf::behavior fake_storage(caf::event_based_actor* self, std::shared_ptr<fake_store> store) {
  return {
    [=](store_atom, const ok_route& route, const storage::event_write& write) {
      ++store->store_calls;
      if (store->hold_writes) {
        store->held_writes.push_back(route);
        return;
      }
      std::string message;
      for (const auto& ev : store->events)
        if (ev.id == write.ev->id)
          message = "duplicate: already have this event";
      if (message.empty()) {
        store->events.push_back(*write.ev);
        self->send(store->fanout, publish_atom_v, committed_event{write.community_id, {write.ev, write.json}});
      }
      // As the writer does: the OK straight to the socket, then counted answered.
      route.sink->send(protocol::render_ok(route.event_id_hex, true, message));
      route.answered->fetch_add(1, std::memory_order_release);
    },
    [=](query_atom, const history_request& request) { store->held_queries.push_back(request); },
    [=](release_atom) {
      for (auto& request : store->held_queries) {
        storage::query_result result{true, {}, {}};
        for (auto it = store->events.rbegin(); it != store->events.rend(); ++it)
          if (protocol::matches_any(request.filters, *it))
            result.events.push_back(protocol::render_event_json(*it));
        self->send(request.reply_to, history_atom_v, request.subscription_id, request.generation,
                   result);
      }
      store->held_queries.clear();
    },
    [=](count_atom, const history_request& request) {
      std::uint64_t n = 0;
      for (const auto& ev : store->events)
        n += protocol::matches_any(request.filters, ev);
      self->send(request.reply_to, counted_atom_v, request.subscription_id,
                 storage::count_result{true, n, {}});
    },
  };
}

struct fixture {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  caf::scheduler::test_coordinator* scheduler = nullptr;
  std::shared_ptr<fake_store> store = std::make_shared<fake_store>();
  std::shared_ptr<relay_metrics> metrics = std::make_shared<relay_metrics>();
  caf::actor storage_actor;
  caf::actor fanout;
  std::uint64_t next_owner = 1;

  fixture() {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    scheduler = &dynamic_cast<caf::scheduler::test_coordinator&>(system->scheduler());
    storage_actor = system->spawn(fake_storage, store);
    fanout = system->spawn(fanout_actor, fanout_args{{storage_actor}, metrics, nullptr});
    store->fanout = fanout;
    spawned = {storage_actor, fanout};
  }

  ~fixture() {
    // The system waits for every actor at destruction, so all of them are told to exit first.
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  std::vector<caf::actor> spawned;
  /// The community actor the connections `connect` opens ask for membership changes (none
  /// unless a test sets one: membership is unavailable then).
  caf::actor community;
  /// Bounds of the connections `connect` opens (community, host and limits are set there).
  connection_policy base_policy;

  struct client {
    caf::actor actor;
    std::shared_ptr<recording_sink> sink;
    std::string challenge;
  };

  client connect(bool closed_community = false, protocol::protocol_limits limits = {}) {
    client c{{}, std::make_shared<recording_sink>(), protocol::make_auth_challenge()};
    connection_args args;
    args.policy = base_policy;
    args.policy.community_id = 1;
    args.policy.host = "hive.test";
    args.policy.closed_community = closed_community;
    args.policy.limits = limits;
    args.challenge = c.challenge;
    args.sink = c.sink;
    args.owner = next_owner++;
    args.fanout = fanout;
    args.writer = storage_actor;
    args.readers = {storage_actor};
    args.metrics = metrics;
    args.community = community;
    c.actor = system->spawn(connection_actor, std::move(args));
    spawned.push_back(c.actor);
    run();
    REQUIRE(c.sink->take() == std::vector<std::string>{"[\"AUTH\",\"" + c.challenge + "\"]"});
    return c;
  }

  void say(const client& c, std::string frame) {
    caf::anon_send(c.actor, frame_atom_v, std::move(frame));
    run();
  }

  void release_history() {
    caf::anon_send(storage_actor, release_atom::value);
    run();
  }

  void run() { scheduler->run(); }
};

std::string ok_frame(const protocol::event& ev, bool accepted, const std::string& message) {
  return protocol::render_ok(ev.id, accepted, message);
}

std::string event_on(const std::string& sub, const protocol::event& ev) {
  return protocol::render_event_frame(sub, protocol::render_event_json(ev));
}

const auto alice = protocol::key_pair::generate();
const auto bob = protocol::key_pair::generate();

} // namespace

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
  base_policy.bans->set_event(held.id, true);
  release_history();
  CHECK(reader.sink->take() == std::vector<std::string>{R"(["EOSE","feed"])"});

  base_policy.bans->set_pubkey(bob.public_key(), true);
  publish_live(test::sign_event(bob, 1, "by an author banned before it arrived"));
  CHECK(reader.sink->take().empty());
  auto fine = test::sign_event(alice, 1, "not banned");
  publish_live(fine);
  CHECK(reader.sink->take() == std::vector<std::string>{event_on("feed", fine)});
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

TEST_CASE_METHOD(fixture, "COUNT answers from storage", "[actor][connection]") {
  store->events.push_back(test::sign_event(alice, 1));
  store->events.push_back(test::sign_event(alice, 1, "two"));
  store->events.push_back(test::sign_event(alice, 7));
  auto c = connect();
  say(c, R"(["COUNT","n",{"kinds":[1]}])");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":2}])"});
}

TEST_CASE_METHOD(fixture, "a COUNT asks no more than one REQ may hold", "[actor][connection][bounds]") {
  base_policy.max_filter_values = 3;
  base_policy.max_broad_filters = 1;
  auto c = connect();
  say(c, R"(["COUNT","n",{"#t":["a","b","c","d"]}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          R"x(["CLOSED","n","rate-limited: too many filter values in one COUNT (at most 3)"])x"});
  say(c, R"(["COUNT","n",{},{}])");
  CHECK(c.sink->take()
        == std::vector<std::string>{
          R"x(["CLOSED","n","rate-limited: too many filters without ids, authors, kinds or tags (at most 1)"])x"});
  say(c, R"(["COUNT","n",{"#t":["a","b","c"]}])");
  CHECK(c.sink->take() == std::vector<std::string>{R"(["COUNT","n",{"count":0}])"});
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

TEST_CASE_METHOD(fixture, "a reply read before the reader was removed is not sent after it",
                 "[actor][connection][access]") {
  base_policy.members = std::make_shared<member_cache>();
  (void)base_policy.members->replace({{alice.public_key(), storage::member_role::member}});
  base_policy.members->set_closed(true);
  store->events.push_back(test::sign_event(alice, 1, "history"));
  auto c = connect(true);
  auto auth = test::sign_event(alice, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
  say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
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
