// SPDX-License-Identifier: MIT
// The bounds on what one client can make a pod hold or do: token buckets per connection and per
// address, the socket caps, the filter budget, the query places and the host cache.
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "actors/connection/connection.hpp"
#include "actors/connection/ip_table.hpp"
#include "actors/fanout/subscription_index.hpp"
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include "actors/gateway/session_table.hpp"
#include "actors/gateway/websocket_outbox.hpp"
#include "actors/gateway/websocket_session.hpp"
#include "actors/storage/reader_waits.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include "protocol/filter_json.hpp"
#include "support/filter_of.hpp"
#include "protocol/relay_message.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using comb::test::filter_of;
using actors::connection;
using actors::connection_policy;

TEST_CASE("a weighted take needs all its tokens and a refused take costs nothing", "[actors][rate]") {
  actors::rate_limiter limiter(10, 20);
  CHECK(limiter.try_take(5.0, 11));
  CHECK_FALSE(limiter.try_take(5.0, 10)); // 9 left
  CHECK(limiter.try_take(5.0, 9));
  CHECK_FALSE(limiter.try_take(5.0, 1));
  CHECK(limiter.try_take(5.5, 5)); // half a second refills 5
  CHECK_FALSE(limiter.full(5.5));
  CHECK(limiter.full(7.5));
}

TEST_CASE("AUTH costs more than other frames, and big frames cost by the byte", "[actors][rate]") {
  connection_policy policy;
  policy.auth_cost = 10;
  CHECK(actors::frame_cost(actors::frame_type::req, 100, policy) < 1.01);
  CHECK(actors::frame_cost(actors::frame_type::auth, 100, policy) > 10.9);
  CHECK(actors::frame_cost(actors::frame_type::event, 512 * 1024, policy) == Approx(33));
}

TEST_CASE("every frame draws on the connection's bucket, then on its address's", "[actors][rate]") {
  connection_policy policy;
  policy.frame_rate = 1;
  policy.frame_burst = 3;
  connection c(policy, "challenge");
  CHECK_FALSE(c.charge_frame(1, 10.0));
  CHECK_FALSE(c.charge_frame(2, 10.0));
  auto refused = c.charge_frame(1, 10.0);
  REQUIRE(refused);
  CHECK(refused->text() == "rate-limited: slow down, too many messages on this connection");
  CHECK_FALSE(c.charge_frame(1, 11.0));

  actors::ip_limits limits;
  limits.frame_rate = 1;
  limits.frame_burst = 4;
  auto shared = std::make_shared<actors::ip_budget>(limits);
  connection_policy per_address;
  per_address.ip = shared;
  connection a(per_address, "a");
  connection b(per_address, "b");
  CHECK_FALSE(a.charge_frame(2, 10.0));
  CHECK_FALSE(b.charge_frame(2, 10.0));
  // Both connections have tokens of their own; the address has none left.
  CHECK(a.charge_frame(1, 10.0)->text() == "rate-limited: slow down, too many messages from your address");
  CHECK(b.charge_frame(1, 10.0).has_value());
}

TEST_CASE("an address holds at most its cap of sockets, counted and checked at once", "[actors][ip]") {
  actors::ip_limits limits;
  limits.max_connections = 3;
  auto table = std::make_shared<actors::ip_table>(limits);
  actors::ip_table::refusal why{};
  std::vector<std::unique_ptr<actors::ip_table::slot>> held;
  for (int i = 0; i < 3; ++i)
    held.push_back(table->open("192.0.2.1", 1.0, why));
  CHECK(held.back() != nullptr);
  CHECK(table->open("192.0.2.1", 1.0, why) == nullptr);
  CHECK(why == actors::ip_table::refusal::too_many_connections);
  CHECK(table->open("192.0.2.2", 1.0, why) != nullptr); // other addresses are not affected
  held.pop_back();
  CHECK(table->connections_of("192.0.2.1") == 2);
  CHECK(table->open("192.0.2.1", 1.0, why) != nullptr);
}

TEST_CASE("concurrent opens never overshoot the per-address cap", "[actors][ip]") {
  actors::ip_limits limits;
  limits.max_connections = 50;
  auto table = std::make_shared<actors::ip_table>(limits);
  std::atomic<int> granted{0};
  std::vector<std::vector<std::unique_ptr<actors::ip_table::slot>>> kept(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      actors::ip_table::refusal why{};
      for (int i = 0; i < 100; ++i)
        if (auto slot = table->open("198.51.100.7", 1.0, why)) {
          ++granted;
          kept[static_cast<std::size_t>(t)].push_back(std::move(slot));
        }
    });
  for (auto& t : threads)
    t.join();
  CHECK(granted == 50);
  CHECK(table->connections_of("198.51.100.7") == 50);
}

TEST_CASE("the socket gate counts and caps in one step", "[actors][ip]") {
  actors::socket_gate gate(100);
  std::atomic<int> entered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i)
        if (gate.try_enter())
          ++entered;
    });
  for (auto& t : threads)
    t.join();
  CHECK(entered == 100);
  CHECK(gate.open() == 100);
  gate.leave();
  CHECK(gate.try_enter());
  CHECK_FALSE(gate.try_enter());
}

TEST_CASE("the address table forgets idle addresses and is bounded", "[actors][ip]") {
  actors::ip_limits limits;
  limits.max_tracked = 1500;
  auto table = std::make_shared<actors::ip_table>(limits);
  for (int i = 0; i < 1500; ++i)
    CHECK(table->budget("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256), 1.0));
  // All are fresh (full buckets, no sockets): the next address sweeps them away.
  CHECK(table->budget("203.0.113.1", 2.0) != nullptr);
  CHECK(table->tracked() < 1024);
  // Addresses that hold sockets are not forgotten, and past the bound new ones are refused.
  actors::ip_table::refusal why{};
  std::vector<std::unique_ptr<actors::ip_table::slot>> held;
  for (int i = 0; i < 1500; ++i)
    if (auto slot = table->open("10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256), 3.0, why))
      held.push_back(std::move(slot));
  CHECK(table->tracked() <= 1500);
  CHECK(table->open("203.0.113.200", 3.0, why) == nullptr);
  CHECK(why == actors::ip_table::refusal::too_many_addresses);
}

TEST_CASE("a full address table sweeps idle addresses before it refuses a new one", "[actors][ip]") {
  actors::ip_limits limits;
  limits.max_tracked = 1000; // under the first doubling sweep (1024)
  auto table = std::make_shared<actors::ip_table>(limits);
  for (int i = 0; i < 1000; ++i)
    REQUIRE(table->budget("10.2." + std::to_string(i / 256) + "." + std::to_string(i % 256), 1.0));
  CHECK(table->tracked() == 1000);
  CHECK(table->budget("203.0.113.77", 1.0) != nullptr);
  CHECK(table->tracked() == 1);
}

TEST_CASE("a connection's subscriptions hold at most the filter budget", "[actors][connection]") {
  connection_policy policy;
  policy.max_filters = 4;
  policy.max_filter_values = 4;
  policy.max_broad_filters = 1;
  connection c(policy, "challenge");
  CHECK(c.open_subscription("a", {filter_of(R"({"kinds":[1,2]})")}));
  CHECK(c.open_subscription("b", {filter_of(R"({"#t":["x"]})")}));
  auto too_many_values = c.open_subscription("c", {filter_of(R"({"kinds":[3,4]})")});
  REQUIRE_FALSE(too_many_values);
  CHECK(too_many_values.error().text().starts_with("rate-limited: too many filter values"));
  CHECK(c.open_subscription("c", {filter_of(R"({"until":0})")}));
  auto broad = c.open_subscription("d", {filter_of(R"({"since":5})")});
  REQUIRE_FALSE(broad);
  CHECK(broad.error().text().starts_with("rate-limited: too many filters without"));
  auto filters = c.open_subscription("d", {filter_of(R"({"ids":[]})"), filter_of(R"({"ids":[]})")});
  REQUIRE_FALSE(filters);
  CHECK(filters.error().text().starts_with("rate-limited: too many filters open"));
  // Replacing a subscription returns its share first; closing returns it all.
  CHECK(c.open_subscription("a", {filter_of(R"({"kinds":[5,6]})")}));
  CHECK(c.close_subscription("a"));
  CHECK(c.open_subscription("d", {filter_of(R"({"kinds":[5,6]})")}));
}

TEST_CASE("live events held for EOSE fit the socket's queue behind a history budget", "[actors][connection]") {
  constexpr std::size_t mib = 1024 * 1024;
  CHECK(actors::held_live_bytes_within(32 * mib, 16 * mib, 32 * mib) == 16 * mib); // the defaults
  CHECK(actors::held_live_bytes_within(256 * mib, 16 * mib, 32 * mib) == 32 * mib);
  CHECK(actors::held_live_bytes_within(2 * mib, 16 * mib, 32 * mib) == 64 * 1024); // a lowered queue
}

TEST_CASE("a connection's subscriptions hold at most the filter bytes budget", "[actors][connection]") {
  connection_policy policy;
  policy.max_filter_value_bytes = 2000;
  connection c(policy, "challenge");
  auto values_of = [](int count, char letter) {
    std::string list;
    for (int i = 0; i < count; ++i)
      list += (i ? ",\"" : "\"") + std::string(499, letter) + std::to_string(i % 10) + "\"";
    return list;
  };
  CHECK(c.open_subscription("a", {filter_of(R"({"#t":[)" + values_of(3, 'x') + "]}")})); // 1,500
  auto long_values = c.open_subscription("b", {filter_of(R"({"#t":[)" + values_of(2, 'y') + "]}")});
  REQUIRE_FALSE(long_values);
  CHECK(long_values.error().text().starts_with("rate-limited: filter values too long open on this connection"));
  // Ids and authors count 32 bytes each: 15 fit beside the 1,500.
  std::string authors;
  for (int i = 0; i < 16; ++i)
    authors += (i ? ",\"" : "\"") + std::string(62, 'a') + (i < 10 ? "0" : "1") + std::to_string(i % 10) + "\"";
  CHECK_FALSE(c.open_subscription("b", {filter_of(R"({"authors":[)" + authors + "]}")}));
  CHECK(c.close_subscription("a"));
  CHECK(c.open_subscription("b", {filter_of(R"({"authors":[)" + authors + "]}")}));
  CHECK(c.held_cost().value_bytes == 16 * 32);
}

TEST_CASE("tag values longer than storage indexes are dropped from filters", "[actors][connection]") {
  std::vector<protocol::filter> filters{filter_of(R"({"#t":["short",")" + std::string(600, 'x') + R"("]})")};
  actors::drop_unindexed_tag_values(filters);
  CHECK(filters[0].tags[0].values == std::vector<std::string>{"short"});
  std::vector<protocol::filter> only_long{filter_of(R"({"#t":[")" + std::string(600, 'x') + R"("]})")};
  actors::drop_unindexed_tag_values(only_long);
  CHECK(protocol::matches_nothing(only_long[0]));
  // Live delivery must not match what history and COUNT never can.
  std::vector<protocol::filter> with_nul{filter_of(R"({"#t":["a\u0000b"]})")};
  actors::drop_unindexed_tag_values(with_nul);
  CHECK(protocol::matches_nothing(with_nul[0]));
}

TEST_CASE("queries beyond the places of a connection wait", "[actors][connection]") {
  connection_policy policy;
  policy.max_queries_in_flight = 2;
  connection c(policy, "challenge");
  CHECK(c.query_may_start());
  c.query_started();
  c.query_started();
  CHECK_FALSE(c.query_may_start());
  c.query_finished();
  CHECK(c.query_may_start());
}

TEST_CASE("ids remembered after EOSE expire by time on a quiet subscription", "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  std::string json = R"({"id":")" + std::string(64, 'a') + R"(","pubkey":"x"})";
  CHECK(c.history_arrived("s", generation, {json}, 100.0).size() == 2);
  CHECK(c.is_open("s", generation));
  CHECK(c.remembered_history_ids() == 1);
  c.expire_history_echoes(100.0 + actors::history_echo_window - 1);
  CHECK(c.remembered_history_ids() == 1);
  c.expire_history_echoes(100.0 + actors::history_echo_window + 1);
  CHECK(c.remembered_history_ids() == 0);
}

TEST_CASE("ids sent in a history still being read are kept however long its next chunk takes",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  std::string json = R"({"id":")" + std::string(64, 'a') + R"(","pubkey":"x"})";
  auto first = c.history_reply("s", generation, {std::make_shared<const std::string>(json)}, 100.0, false);
  CHECK(first.events.size() == 1);
  c.expire_history_echoes(100.0 + actors::history_echo_window + 1); // a slow reader's next chunk
  CHECK(c.remembered_history_ids() == 1);
}

TEST_CASE("emptied fan-out buckets are erased", "[actors][fanout]") {
  actors::subscription_index index;
  for (int i = 0; i < 300; ++i)
    index.add(1, "churn", {filter_of(R"({"#t":["value-)" + std::to_string(i) + R"("]})"),
                           filter_of(R"({"kinds":[)" + std::to_string(i) + R"(]})")});
  CHECK(index.bucket_count() == 2);
  index.add(1, "other", {filter_of(R"({"authors":[")" + std::string(64, 'b') + R"("]})")});
  index.remove(1, "churn");
  CHECK(index.bucket_count() == 1);
  index.remove_owner(1);
  CHECK(index.bucket_count() == 0);
  CHECK(index.size() == 0);
}

TEST_CASE("a session registering for an ended community is closed as it registers", "[actors][sessions]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  actors::session_table table;
  actors::member_cache community;
  auto outbox = [&] {
    return std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 1024, metrics);
  };
  auto before = outbox();
  auto before_id = table.enroll(before, caf::actor{}, 7, community);
  CHECK_FALSE(before->closing());
  // The community actor marks the cache, then closes the sessions it finds.
  community.set_ended(true);
  table.close_community(7);
  CHECK(before->closing() == actors::close_reason::policy);
  // A connection whose host was looked up before the archive registers only now.
  auto late = outbox();
  auto late_id = table.enroll(late, caf::actor{}, 7, community);
  CHECK(late->closing() == actors::close_reason::policy);
  actors::member_cache other;
  auto elsewhere = outbox();
  auto elsewhere_id = table.enroll(elsewhere, caf::actor{}, 8, other);
  CHECK_FALSE(elsewhere->closing());
  CHECK(table.size() == 3);
  for (auto id : {before_id, late_id, elsewhere_id})
    table.withdraw(id);
  CHECK(table.size() == 0);
  io.restart();
  io.poll();
}

TEST_CASE("a deletion naming more than the cap is refused before any mark is stored", "[actors][connection]") {
  connection_policy policy;
  policy.max_deletion_targets = 3;
  connection c(policy, "challenge");
  auto author = protocol::key_pair::generate();
  std::vector<protocol::tag> three{{"e", std::string(64, '1')}, {"e", std::string(64, '2')}, {"a", "1:x:y"}};
  CHECK_FALSE(c.admit_event(test::sign_event(author, 5, "", three), test::unix_now(), 1.0));
  auto four = three;
  four.push_back({"e", std::string(64, '3')});
  auto refused = c.admit_event(test::sign_event(author, 5, "", four), test::unix_now(), 1.0);
  REQUIRE(refused);
  CHECK(refused->text() == "invalid: a deletion may name at most 3 events");
  // Other kinds may carry many e tags (replies, reposts).
  CHECK_FALSE(c.admit_event(test::sign_event(author, 1, "", four), test::unix_now(), 1.0));
}

TEST_CASE("past the pod's outbound bound, readers holding a share or more are cut", "[actors][outbox]") {
  constexpr std::size_t mib = 1024 * 1024;
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  {
    auto slow = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 64 * mib, metrics, 3 * mib);
    auto quick = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 64 * mib, metrics, 3 * mib);
    constexpr auto overhead = actors::outbound_frame::held_overhead();
    slow->send(std::string(2 * mib, 'x'));
    quick->send(std::string(mib / 2, 'y'));
    CHECK(metrics->outbound_bytes.load() == static_cast<std::int64_t>(2 * mib + mib / 2 + 2 * overhead));
    slow->send(std::string(mib, 'x'));
    CHECK(slow->closing() == actors::close_reason::slow_reader);
    CHECK(metrics->outbound_bytes.load() == static_cast<std::int64_t>(mib / 2 + overhead));
    // A small queue still grows past the bound: the quick reader is not the one to blame.
    quick->send(std::string(100, 'y'));
    CHECK_FALSE(quick->closing());
    quick->written(mib / 2 + overhead);
    CHECK(metrics->outbound_bytes.load() == static_cast<std::int64_t>(100 + overhead));
  }
  io.restart();
  io.poll();
}

TEST_CASE("past the pod's outbound bound, a reader's share is that bound over the pod's connections",
          "[actors][outbox]") {
  constexpr std::size_t kib = 1024;
  CHECK(actors::websocket_outbox::pod_share(1024 * 1024 * kib, 10'000) == 107'374);
  CHECK(actors::websocket_outbox::pod_share(1024 * 1024 * kib, 100) == actors::websocket_outbox::max_pod_share);
  CHECK(actors::websocket_outbox::pod_share(16 * 1024 * kib, 10'000) == actors::websocket_outbox::min_pod_share);
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  {
    const std::size_t share = actors::websocket_outbox::pod_share(1000 * kib, 10);
    REQUIRE(share == 100 * kib);
    auto a = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 64 * 1024 * kib, metrics, 1000 * kib, share);
    auto b = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 64 * 1024 * kib, metrics, 1000 * kib, share);
    b->send(std::string(950 * kib, 'x'));
    a->send(std::string(60 * kib, 'y')); // past the pod's bound, below its share: kept
    CHECK_FALSE(a->closing());
    a->send(std::string(60 * kib, 'y')); // 120 KiB, past its share of 100: cut
    CHECK(a->closing() == actors::close_reason::slow_reader);
    // An empty queue takes a frame larger than its share: a quick reader gets a large list.
    auto c = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 64 * 1024 * kib, metrics, 1000 * kib, share);
    c->send(std::string(300 * kib, 'z'));
    CHECK_FALSE(c->closing());
    c->send(std::string(1 * kib, 'z'));
    CHECK(c->closing() == actors::close_reason::slow_reader);
  }
  io.restart();
  io.poll();
}

TEST_CASE("a live event frame that shares its JSON counts its whole length against the bound",
          "[actors][outbox]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  {
    auto json = std::make_shared<const std::string>(1000, 'j');
    actors::shared_event_frame frame{std::make_shared<const std::string>(protocol::event_frame_prefix("sub")), json};
    REQUIRE(frame.flattened() == protocol::render_event_frame("sub", *json));
    const auto charge = frame.size() + actors::outbound_frame::held_overhead();
    auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io),
                                                             3 * charge - 1, metrics);
    outbox->send_event(frame);
    outbox->send_event(frame);
    CHECK(outbox->pending_bytes() == 2 * charge);
    CHECK(metrics->outbound_bytes.load() == static_cast<std::int64_t>(2 * charge));
    // The third copy would pass the bound by one byte, although its JSON is the same object.
    outbox->send_event(frame);
    CHECK(outbox->closing() == actors::close_reason::slow_reader);
    CHECK(metrics->outbound_bytes.load() == 0);
  }
  io.restart();
  io.poll();
}

TEST_CASE("a reader that lost access, or a policy close, drops the queued events and keeps the rest",
          "[actors][outbox]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  {
    auto json = std::make_shared<const std::string>(100, 'j');
    actors::shared_event_frame frame{std::make_shared<const std::string>(protocol::event_frame_prefix("sub")), json};
    auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 1 << 20, metrics);
    outbox->send_event(frame);
    outbox->send(R"(["OK","x",true,""])");
    outbox->send_event(frame);
    outbox->send(protocol::render_event_frame("sub", *json)); // held for EOSE, sent after it whole
    const auto ok_charge = std::string(R"(["OK","x",true,""])").size() + actors::outbound_frame::held_overhead();
    outbox->drop_events();
    CHECK(outbox->pending_bytes() == ok_charge);
    CHECK(metrics->outbound_bytes.load() == static_cast<std::int64_t>(outbox->pending_bytes()));
    outbox->send_event(frame);
    outbox->close(actors::close_reason::policy);
    CHECK(outbox->pending_bytes() == ok_charge);
  }
  io.restart();
  io.poll();
}

TEST_CASE("all readers but one may wait for a slow client, and queries avoid a waiting reader",
          "[actors][readers]") {
  comb::actors::reader_waits waits(2);
  CHECK(waits.pick(0) == 0);
  CHECK(waits.pick(1) == 1);
  REQUIRE(waits.begin_wait(0));
  CHECK_FALSE(waits.begin_wait(1)); // the last free reader never waits
  CHECK(waits.pick(0) == 1);        // connection 0's queries go around the waiting reader
  CHECK(waits.pick(1) == 1);
  waits.end_wait(0);
  CHECK(waits.pick(0) == 0);
  REQUIRE(waits.begin_wait(1));
  CHECK(waits.pick(1) == 0);
  waits.end_wait(1);

  comb::actors::reader_waits lone(1);
  CHECK_FALSE(lone.begin_wait(0)); // one reader: it never waits for a client
  CHECK(lone.pick(7) == 0);
}

TEST_CASE("a reply that waited once keeps its wait slot until it ends", "[actors][readers]") {
  comb::actors::reader_waits waits(2);
  {
    comb::actors::reply_wait_slot slot(&waits, 0);
    REQUIRE(slot.hold());
    // Between two chunks the reply is not waiting, yet queries must keep going around it: its
    // client is slow, and a query queued behind it would wait as long as the client does.
    CHECK(waits.pick(0) == 1);
    REQUIRE(slot.hold()); // the next wait of the same reply needs no second slot
    comb::actors::reply_wait_slot other(&waits, 1);
    CHECK_FALSE(other.hold()); // the last free reader never waits
    CHECK(waits.pick(0) == 1);
  }
  CHECK(waits.pick(0) == 0); // the reply ended: its slot is free again
  comb::actors::reply_wait_slot next(&waits, 1);
  CHECK(next.hold());

  comb::actors::reply_wait_slot unbounded(nullptr, 0);
  CHECK(unbounded.hold()); // a lone test reader without slots may always wait
}

TEST_CASE("queries go to the least-queued reader that is not waiting", "[actors][readers]") {
  comb::actors::reader_waits waits(3);
  waits.queued(0);
  CHECK(waits.pick(0) == 1); // connection 0's own reader is busy, 1 is idle
  waits.queued(1);
  CHECK(waits.pick(0) == 2);
  waits.queued(2);
  CHECK(waits.pick(1) == 1); // all busy alike: the connection's own
  waits.answered(0);
  CHECK(waits.pick(1) == 0);
  REQUIRE(waits.begin_wait(0));
  CHECK(waits.pick(1) == 1); // the idle reader waits for a client: not a candidate
  waits.end_wait(0);
  waits.answered(0); // more answers than queries never wrap below zero
  CHECK(waits.pick(2) == 0);
}

TEST_CASE("a socket waiting for its actor to catch up stops waiting once the connection closes",
          "[actors][sessions]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 1024, metrics);
  const actors::inbound_bounds bounds{4096, 16384};
  std::atomic<std::size_t> pending{4096}; // the actor holds its bound and will never handle it
  std::optional<bool> waited;
  boost::asio::co_spawn(io, actors::wait_for_actor(pending, bounds, *outbox, *metrics),
                        [&](std::exception_ptr, bool read_on) { waited = read_on; });
  io.run_for(std::chrono::milliseconds(30));
  CHECK_FALSE(waited);
  outbox->close(actors::close_reason::internal_error);
  io.run_for(std::chrono::milliseconds(150)); // its pauses grow to 64 ms
  REQUIRE(waited);
  CHECK_FALSE(*waited);
  CHECK(metrics->inbound_pod_pauses.load() == 0); // its own bound, not the pod's
  // Caught up, it reads on.
  auto open = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 1024, metrics);
  pending = 0;
  waited.reset();
  boost::asio::co_spawn(io, actors::wait_for_actor(pending, bounds, *open, *metrics),
                        [&](std::exception_ptr, bool read_on) { waited = read_on; });
  io.restart();
  io.run_for(std::chrono::milliseconds(30));
  REQUIRE(waited);
  CHECK(*waited);
}

TEST_CASE("a socket does not read while the pod holds its bound of messages not yet handled",
          "[actors][sessions]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 1024, metrics);
  std::atomic<std::size_t> pending{0}; // this connection's actor holds nothing
  metrics->inbound_frame_bytes = 16384; // the other connections' actors hold the pod's bound
  std::optional<bool> waited;
  boost::asio::co_spawn(io, actors::wait_for_actor(pending, {4096, 16384}, *outbox, *metrics),
                        [&](std::exception_ptr, bool read_on) { waited = read_on; });
  io.run_for(std::chrono::milliseconds(50));
  CHECK_FALSE(waited);
  CHECK(metrics->inbound_pod_pauses.load() == 1); // one pause, however many looks
  metrics->inbound_frame_bytes = 16383;
  io.run_for(std::chrono::milliseconds(150));
  REQUIRE(waited);
  CHECK(*waited);
}

TEST_CASE("bytes handed to a connection actor leave the pod's count once handled, or once socket and actor are gone",
          "[actors][sessions]") {
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto ledger = std::make_shared<actors::frame_ledger>(metrics);
  using actors::frame_ledger;
  ledger->handed(100);
  ledger->handed(50);
  CHECK(ledger->pending().load() == frame_ledger::charge(100) + frame_ledger::charge(50));
  CHECK(metrics->inbound_frame_bytes.load() == frame_ledger::charge(100) + frame_ledger::charge(50));
  ledger->handled(100);
  CHECK(metrics->inbound_frame_bytes.load() == frame_ledger::charge(50));
  // The actor failed with a message in its mailbox, dropped unread: nobody hands those bytes
  // back, so they leave with the last holder of the ledger (else the pod's bound fills for good).
  auto actor_copy = ledger;
  ledger.reset();
  CHECK(metrics->inbound_frame_bytes.load() == frame_ledger::charge(50));
  actor_copy.reset();
  CHECK(metrics->inbound_frame_bytes.load() == 0);
}

TEST_CASE("empty messages handed to a connection actor count against its bound", "[actors][sessions]") {
  // Six bytes on the wire each, and a mailbox element each: a client sending them is paused as
  // one sending large frames is, not read on while the mailbox grows.
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 1024, metrics);
  actors::frame_ledger ledger(metrics);
  const actors::inbound_bounds bounds{64 * 1024, 1024 * 1024};
  std::size_t handed = 0;
  while (ledger.pending().load() < bounds.connection && handed < bounds.connection) {
    ledger.handed(0);
    ++handed;
  }
  CHECK(handed <= bounds.connection / 64);
  std::optional<bool> waited;
  boost::asio::co_spawn(io, actors::wait_for_actor(ledger.pending(), bounds, *outbox, *metrics),
                        [&](std::exception_ptr, bool read_on) { waited = read_on; });
  io.run_for(std::chrono::milliseconds(30));
  CHECK_FALSE(waited);
  while (handed-- > 0)
    ledger.handled(0);
  io.run_for(std::chrono::milliseconds(150));
  REQUIRE(waited);
  CHECK(*waited);
}
