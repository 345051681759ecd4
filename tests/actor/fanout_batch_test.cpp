// SPDX-License-Identifier: MIT
// How the fan-out batches its deliveries, on CAF's deterministic scheduler: one message per
// connection per turn, sent as soon as the mailbox holds nothing more, capped in size, and
// never overtaken by a later message to the same connection.
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <cstring>

#include "test_system.hpp"
#include "actors/fanout/fanout_actor.hpp"
#include "actors/messages.hpp"
#include "protocol/canonical_json.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using namespace comb::actors;

namespace {

const auto author = protocol::key_pair::generate();

/// What a connection was sent by the fan-out, in arrival order.
struct received {
  std::vector<std::size_t> batch_sizes;      ///< deliveries per deliver message
  std::vector<std::string> deliveries;       ///< "<subscription>:<content>" in order
  std::vector<std::string> order;            ///< "deliver" / "revoke" per message
};

caf::behavior recording_connection(caf::event_based_actor*, std::shared_ptr<received> seen) {
  return {
    [=](deliver_atom, const live_batch& batch) {
      seen->order.push_back("deliver");
      seen->batch_sizes.push_back(batch.matches.size());
      for (const auto& match : batch.matches)
        seen->deliveries.push_back(match.subscription.id + ":" + batch.events.at(match.event).ev->content);
    },
    [=](revoke_atom, std::int64_t, const pubkey_list&) { seen->order.push_back("revoke"); },
  };
}

struct fixture : comb::test::test_system {
  std::shared_ptr<relay_metrics> metrics = std::make_shared<relay_metrics>();
  caf::actor fanout;
  std::vector<caf::actor> spawned;

  fixture() {
    fanout = system->spawn(fanout_actor, fanout_args{{}, metrics, nullptr});
    spawned.push_back(fanout);
  }

  ~fixture() {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    scheduler->run();
  }

  std::shared_ptr<received> connect(std::uint64_t owner, const std::vector<std::string>& subs) {
    auto seen = std::make_shared<received>();
    auto actor = system->spawn(recording_connection, seen);
    spawned.push_back(actor);
    for (const auto& sub : subs) {
      protocol::filter f;
      f.kinds = std::vector<std::uint32_t>{1};
      caf::anon_send(fanout, subscribe_atom_v, live_request{actor, owner, 1, sub, 1, {f}, nullptr, {}});
    }
    scheduler->run();
    return seen;
  }

  static committed_event committed(const std::string& content, std::int64_t community = 1) {
    auto ev = test::sign_event(author, 1, content);
    auto json = std::make_shared<const std::string>(protocol::render_event_json(ev));
    return {community, {std::make_shared<const protocol::event>(ev), json}};
  }

  void publish(const std::string& content, std::int64_t community = 1) {
    caf::anon_send(fanout, publish_atom_v, committed(content, community));
  }

  /// Delivers coalesce_above_rate deliveries per second for one rate interval (to a connection
  /// of 50 subscriptions), then lets the interval end: the next publish finds the pod loaded.
  void load_up() {
    std::vector<std::string> subs;
    for (int i = 0; i < 50; ++i)
      subs.push_back("load" + std::to_string(i));
    connect(1000, subs);
    double seconds = std::chrono::duration<double>(rate_interval).count();
    auto per_interval = static_cast<int>(coalesce_above_rate * seconds);
    for (int i = 0; i < per_interval / 50; ++i)
      publish("load " + std::to_string(i));
    scheduler->run();
    scheduler->advance_time(rate_interval);
    scheduler->run();
  }
};

} // namespace

TEST_CASE_METHOD(fixture, "a burst of publishes reaches a connection in one message, in order",
                 "[actor][fanout]") {
  auto one = connect(1, {"a", "b"});
  auto two = connect(2, {"c"});
  std::vector<std::string> expected_one;
  std::vector<std::string> expected_two;
  for (int i = 0; i < 100; ++i) {
    publish("n" + std::to_string(i));
    expected_one.push_back("a:n" + std::to_string(i));
    expected_one.push_back("b:n" + std::to_string(i));
    expected_two.push_back("c:n" + std::to_string(i));
  }
  scheduler->run();
  CHECK(one->deliveries == expected_one);
  CHECK(two->deliveries == expected_two);
  // All queued before the fan-out ran: one turn, one message per connection.
  CHECK(one->batch_sizes == std::vector<std::size_t>{200});
  CHECK(two->batch_sizes == std::vector<std::size_t>{100});
  CHECK(metrics->deliveries.load() == 300);
}

TEST_CASE_METHOD(fixture, "a lone publish is delivered at once, not held for a later one",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  publish("first");
  scheduler->run();
  CHECK(one->deliveries == std::vector<std::string>{"a:first"});
  publish("second");
  scheduler->run_once(); // the fan-out's turn only
  // Nothing left for the fan-out to do: the delivery is already in the connection's mailbox.
  CHECK(caf::actor_cast<caf::scheduled_actor*>(fanout)->mailbox().blocked()); // idle, waiting
  CHECK(scheduler->jobs.size() == 1);
  scheduler->run();
  CHECK(one->deliveries == std::vector<std::string>{"a:first", "a:second"});
  CHECK(one->batch_sizes == std::vector<std::size_t>{1, 1});
}

TEST_CASE_METHOD(fixture, "a long burst is sent in batches of at most max_held_deliveries",
                 "[actor][fanout]") {
  // 16 subscriptions of one connection: the delivery bound comes before the publish bound.
  std::vector<std::string> subs;
  for (int i = 0; i < 16; ++i)
    subs.push_back("s" + std::to_string(i < 10 ? 0 : 1) + std::to_string(i % 10));
  auto one = connect(1, subs);
  const std::size_t events = max_held_deliveries / subs.size() + 2;
  REQUIRE(events < max_held_publishes);
  for (std::size_t i = 0; i < events; ++i)
    publish(std::to_string(i));
  scheduler->run();
  REQUIRE(one->deliveries.size() == events * subs.size());
  CHECK(one->deliveries.front() == "s00:0");
  CHECK(one->deliveries.back() == "s15:" + std::to_string(events - 1));
  CHECK(one->batch_sizes == std::vector<std::size_t>{max_held_deliveries, 2 * subs.size()});
}

TEST_CASE_METHOD(fixture, "held deliveries go out before a revocation that came after them",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  publish("before");
  caf::anon_send(fanout, revoke_atom_v, std::int64_t{1}, pubkey_list{author.public_key()});
  scheduler->run();
  CHECK(one->order == std::vector<std::string>{"deliver", "revoke"});
  CHECK(one->deliveries == std::vector<std::string>{"a:before"});
}

TEST_CASE_METHOD(fixture, "a storage writer's batch reaches each connection in one message, in commit order",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  committed_events batch;
  for (int i = 0; i < 5; ++i)
    batch.push_back(committed("w" + std::to_string(i)));
  batch.push_back(batch.front()); // seen already: delivered once
  caf::anon_send(fanout, publish_atom_v, batch);
  scheduler->run();
  CHECK(one->deliveries == std::vector<std::string>{"a:w0", "a:w1", "a:w2", "a:w3", "a:w4"});
  CHECK(one->batch_sizes == std::vector<std::size_t>{5});
}

TEST_CASE_METHOD(fixture, "held deliveries go out after max_held_publishes even while more publishes wait",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  publish("first");
  for (std::size_t i = 0; i < max_held_publishes + 10; ++i)
    publish("other " + std::to_string(i), 2); // another community: nothing for this connection
  publish("last");
  scheduler->run();
  CHECK(one->deliveries == std::vector<std::string>{"a:first", "a:last"});
  // Without the bound both would have waited for the mailbox to run dry: one message.
  CHECK(one->batch_sizes == std::vector<std::size_t>{1, 1});
}

TEST_CASE_METHOD(fixture, "under load, a turn's deliveries wait for the coalescing window and leave together",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  load_up();
  auto messages_before = one->batch_sizes.size();
  publish("first");
  scheduler->run();
  // The pod delivered at coalesce_above_rate: the lone event waits for company.
  CHECK(one->batch_sizes.size() == messages_before);
  publish("second");
  scheduler->run();
  CHECK(one->batch_sizes.size() == messages_before);
  scheduler->advance_time(coalescing_window);
  scheduler->run();
  REQUIRE(one->batch_sizes.size() == messages_before + 1);
  CHECK(one->batch_sizes.back() == 2);
  CHECK(one->deliveries.back() == "a:second");
  CHECK(one->deliveries[one->deliveries.size() - 2] == "a:first");
}

TEST_CASE_METHOD(fixture, "while coalescing, held deliveries leave once they reach max_held_coalescing",
                 "[actor][fanout]") {
  std::vector<std::string> subs;
  for (int i = 0; i < 128; ++i)
    subs.push_back("c" + std::to_string(i));
  auto one = connect(1, subs);
  load_up();
  auto messages_before = one->batch_sizes.size();
  // Every event also reaches load_up's 50 subscriptions.
  const std::size_t per_event = subs.size() + 50;
  const std::size_t events_to_cap = (max_held_coalescing + per_event - 1) / per_event;
  REQUIRE(events_to_cap + 1 < max_held_publishes);
  REQUIRE(events_to_cap * subs.size() > max_held_deliveries); // the larger bound is the one used
  for (std::size_t i = 0; i <= events_to_cap; ++i)
    publish("b" + std::to_string(i));
  scheduler->run(); // no time passes: only the bound can send them
  REQUIRE(one->batch_sizes.size() == messages_before + 1);
  CHECK(one->batch_sizes.back() == events_to_cap * subs.size());
  scheduler->advance_time(coalescing_window);
  scheduler->run();
  REQUIRE(one->batch_sizes.size() == messages_before + 2);
  CHECK(one->batch_sizes.back() == subs.size());
  auto last = one->deliveries.back();
  CHECK(last.substr(last.find(':')) == ":b" + std::to_string(events_to_cap));
}

TEST_CASE_METHOD(fixture, "while coalescing, a revocation still never overtakes held deliveries",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  load_up();
  one->order.clear();
  publish("before");
  caf::anon_send(fanout, revoke_atom_v, std::int64_t{1}, pubkey_list{author.public_key()});
  scheduler->run();
  CHECK(one->order == std::vector<std::string>{"deliver", "revoke"});
  // The flush scheduled for "before" finds nothing held: no empty message follows.
  scheduler->advance_time(coalescing_window);
  scheduler->run();
  CHECK(one->order == std::vector<std::string>{"deliver", "revoke"});
  CHECK(one->batch_sizes.back() == 1);
}

TEST_CASE_METHOD(fixture, "when the load falls, deliveries go out at once again", "[actor][fanout]") {
  auto one = connect(1, {"a"});
  load_up();
  publish("held");
  scheduler->run();
  scheduler->advance_time(coalescing_window);
  scheduler->run();
  auto messages = one->batch_sizes.size();
  // A quiet second: one delivery in it is far below the rate.
  scheduler->advance_time(std::chrono::seconds(1));
  publish("quiet");
  scheduler->run();
  REQUIRE(one->batch_sizes.size() == messages + 1);
  CHECK(one->deliveries.back() == "a:quiet");
}

TEST_CASE("the coalescing window lengthens as each connection's share of the deliveries falls",
          "[actor][fanout]") {
  using std::chrono::milliseconds;
  // 200 connections at 1,000 events per second each: 8 events take 8 ms, so the shortest window.
  CHECK(window_for(200'000, 200, 1.0) == caf::timespan{coalescing_window});
  // 1,000 connections at 200 per second: 8 events take 40 ms.
  CHECK(window_for(200'000, 1'000, 1.0) == caf::timespan{milliseconds(40)});
  // 10,000 connections at 20 per second: 400 ms wanted, the bound holds it to 50 ms.
  CHECK(window_for(200'000, 10'000, 1.0) == caf::timespan{max_coalescing_window});
  CHECK(window_for(0, 0, 0.1) == caf::timespan{coalescing_window});
}

TEST_CASE_METHOD(fixture, "under load spread over many connections, held deliveries wait for the longer window",
                 "[actor][fanout]") {
  // 500 connections of one subscription each: coalesce_above_rate deliveries in one rate
  // interval is then 10 events per connection, 100 per second, so 8 per write take 80 ms.
  std::vector<std::shared_ptr<received>> many;
  for (std::uint64_t owner = 1; owner <= 500; ++owner)
    many.push_back(connect(owner, {"m"}));
  double seconds = std::chrono::duration<double>(rate_interval).count();
  auto per_interval = static_cast<std::size_t>(coalesce_above_rate * seconds);
  for (std::size_t i = 0; i < per_interval / many.size(); ++i)
    publish("load " + std::to_string(i));
  scheduler->run();
  scheduler->advance_time(rate_interval);
  scheduler->run();
  auto& one = *many.front();
  auto messages_before = one.batch_sizes.size();
  publish("first");
  scheduler->run();
  scheduler->advance_time(coalescing_window);
  scheduler->run();
  // The shortest window passed: still held.
  CHECK(one.batch_sizes.size() == messages_before);
  scheduler->advance_time(max_coalescing_window - coalescing_window);
  scheduler->run();
  REQUIRE(one.batch_sizes.size() == messages_before + 1);
  CHECK(one.deliveries.back() == "m:first");
}

TEST_CASE_METHOD(fixture, "events of communities nobody here reads do not push out the ids already delivered",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  auto first = committed("first");
  caf::anon_send(fanout, publish_atom_v, first);
  scheduler->run();
  REQUIRE(one->deliveries == std::vector<std::string>{"a:first"});
  // A gap fill's worth of another community's events (more than the ids the fan-out keeps), in
  // runs, then the first again, as a fill that reaches back before the loss brings it.
  auto other = committed("elsewhere", 2);
  for (std::uint32_t i = 0; i < 120'000; ++i) {
    auto ev = std::make_shared<protocol::event>(*other.event.ev);
    std::memcpy(ev->id.data(), &i, sizeof i);
    caf::anon_send(fanout, publish_atom_v, committed_event{2, {ev, other.event.json}});
    if (i % 10'000 == 0)
      scheduler->run();
  }
  caf::anon_send(fanout, publish_atom_v, first);
  scheduler->run();
  CHECK(one->deliveries == std::vector<std::string>{"a:first"});
}

TEST_CASE_METHOD(fixture, "an event whose expiration passed on its way to the fan-out is not delivered",
                 "[actor][fanout]") {
  auto one = connect(1, {"a"});
  const auto now = test::unix_now();
  for (auto [content, expires] : {std::pair{"lapsed", now - 1}, std::pair{"fresh", now + 3600}}) {
    auto ev = test::sign_event(author, 1, content, {{"expiration", std::to_string(expires)}});
    auto json = std::make_shared<const std::string>(protocol::render_event_json(ev));
    caf::anon_send(fanout, publish_atom_v, committed_event{1, {std::make_shared<const protocol::event>(ev), json}});
  }
  scheduler->run();
  CHECK(one->deliveries == std::vector<std::string>{"a:fresh"});
  CHECK(metrics->live_events_expired.load() == 1);
}
