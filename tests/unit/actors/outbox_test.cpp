// SPDX-License-Identifier: MIT
// A relay-signed list or room state that waits unwritten in a socket's queue, or held for a
// subscription still reading its history, is replaced by a newer one for the same subscription
// (DESIGN, cross-pod delivery: membership churn must not flood connections).
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "actors/connection/connection.hpp"
#include "actors/gateway/websocket_outbox.hpp"
#include "protocol/relay_message.hpp"
#include "support/signed_events.hpp"

using namespace comb;

namespace {

const auto relay = protocol::key_pair::generate();
const auto someone = protocol::key_pair::generate();

actors::live_event live_of(const protocol::event& ev) {
  return actors::live_event{std::make_shared<const protocol::event>(ev),
                            std::make_shared<const std::string>(protocol::render_event_json(ev))};
}

/// The frame `reader` makes of `ev` for its subscription "s" (open, past EOSE).
actors::shared_event_frame frame_for(actors::connection& reader, const protocol::event& ev) {
  auto frame = reader.live_arrived("s", 1, live_of(ev), 0);
  REQUIRE(frame);
  return *frame;
}

actors::connection live_reader() {
  actors::connection reader(actors::connection_policy{}, "challenge");
  REQUIRE(reader.open_subscription("s").ok());
  (void)reader.history_arrived("s", 1, {});
  return reader;
}

} // namespace

TEST_CASE("a member list waiting in a socket's queue is replaced by a newer one, nothing else is",
          "[actors][outbox]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto reader = live_reader();
  auto other = live_reader(); // another subscription of the same socket
  const auto now = test::unix_now();
  const std::string members(20'000, 'm'); // a list of a few hundred members
  auto list_at = [&](std::int64_t at) {
    return test::sign_event(relay, 13534, members, {{"-"}}, at);
  };
  auto note = test::sign_event(someone, 1, "between");
  {
    // Room for three lists: without the replacing, the fourth would cut the reader.
    auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 65'000, metrics);
    std::vector<actors::shared_event_frame> frames{frame_for(reader, list_at(now - 3)), frame_for(reader, note),
                                                   frame_for(other, list_at(now - 3))};
    for (std::int64_t at = now - 2; at <= now; ++at)
      frames.push_back(frame_for(reader, list_at(at)));
    // One that arrives late with an older list replaces nothing.
    frames.push_back(frame_for(reader, list_at(now - 5)));
    for (auto& frame : frames)
      outbox->send_events(std::span(&frame, 1));
    CHECK_FALSE(outbox->closing());
    CHECK(metrics->superseded_frames_dropped.load() == 3);
    // Left: the note, the other subscription's list, the newest list, the late older one.
    const auto list_frame = frame_for(reader, list_at(now)).size();
    CHECK(outbox->pending_bytes()
          == frame_for(reader, note).size() + 3 * list_frame + 4 * actors::outbound_frame::held_overhead());
  }
  io.restart();
  io.poll();
}

TEST_CASE("only relay-signed replaceable and addressable kinds carry an address to be replaced by",
          "[actors][outbox]") {
  auto reader = live_reader();
  CHECK(*frame_for(reader, test::sign_event(relay, 13534, "", {{"-"}})).replaceable_address
        == "13534:" + protocol::to_hex(relay.public_key()) + ":");
  CHECK(*frame_for(reader, test::sign_event(relay, 39002, "", {{"d", "pizza"}})).replaceable_address
        == "39002:" + protocol::to_hex(relay.public_key()) + ":pizza");
  CHECK_FALSE(frame_for(reader, test::sign_event(relay, 8000, "", {{"-"}})).replaceable_address);
  CHECK_FALSE(frame_for(reader, test::sign_event(someone, 0, "{}")).replaceable_address);
  CHECK_FALSE(frame_for(reader, test::sign_event(someone, 30023, "", {{"d", "post"}})).replaceable_address);
}

TEST_CASE("a subscription still reading its history holds only the newest of a churned list",
          "[actors][outbox]") {
  actors::connection reader(actors::connection_policy{}, "challenge");
  REQUIRE(reader.open_subscription("s").ok());
  const auto now = test::unix_now();
  std::vector<protocol::event> lists;
  for (std::int64_t at = now - 3; at <= now; ++at)
    lists.push_back(test::sign_event(relay, 13534, "members", {{"-"}}, at));
  auto delta = test::sign_event(relay, 8000, "", {{"-"}, {"p", protocol::to_hex(someone.public_key())}});
  for (const auto& ev : {lists[0], lists[2], delta, lists[3], lists[1]}) // the last one late
    CHECK_FALSE(reader.live_arrived("s", 1, live_of(ev), 0));
  auto frames = reader.history_arrived("s", 1, {});
  // EOSE, then what was held: the delta and the newest list, in arrival order. The late older
  // one replaced nothing as it came, but a newer one of its address was held: after EOSE it
  // would look like the current list.
  REQUIRE(frames.size() == 3);
  CHECK(frames[0] == protocol::render_eose("s"));
  CHECK(frames[1].find(protocol::to_hex(delta.id)) != std::string::npos);
  CHECK(frames[2].find(protocol::to_hex(lists[3].id)) != std::string::npos);
}

TEST_CASE("a held list is replaced only by one that is then held in its place", "[actors][outbox]") {
  actors::connection_policy policy;
  policy.max_buffered_live_bytes = 4000;
  actors::connection reader(policy, "challenge");
  REQUIRE(reader.open_subscription("s").ok());
  const auto now = test::unix_now();
  auto small_list = test::sign_event(relay, 13534, std::string(1000, 'm'), {{"-"}}, now - 1);
  auto post = test::sign_event(someone, 1, "held after the list");
  auto large_list = test::sign_event(relay, 13534, std::string(4000, 'm'), {{"-"}}, now);
  for (const auto& ev : {small_list, post, large_list})
    CHECK_FALSE(reader.live_arrived("s", 1, live_of(ev), 0));
  // The larger list does not fit even in the older one's place: the client gets the older
  // list and what followed it, then nothing more until EOSE, as for any event past the bound.
  auto frames = reader.history_arrived("s", 1, {});
  REQUIRE(frames.size() == 3);
  CHECK(frames[1].find(protocol::to_hex(small_list.id)) != std::string::npos);
  CHECK(frames[2].find(protocol::to_hex(post.id)) != std::string::npos);
}

TEST_CASE("a held list is replaced only by one that then fits the connection's bound too", "[actors][outbox]") {
  actors::connection_policy policy;
  policy.max_buffered_live_bytes_per_connection = 3000;
  actors::connection reader(policy, "challenge");
  auto other = reader.open_subscription("other");
  auto s = reader.open_subscription("s");
  REQUIRE(other.ok());
  REQUIRE(s.ok());
  const auto now = test::unix_now();
  auto post = test::sign_event(someone, 1, std::string(1500, 'p')); // about 1,750 bytes held
  auto small_list = test::sign_event(relay, 13534, std::string(500, 'm'), {{"-"}}, now - 1);
  auto large_list = test::sign_event(relay, 13534, std::string(1200, 'm'), {{"-"}}, now);
  CHECK_FALSE(reader.live_arrived("other", other.value(), live_of(post), 0));
  for (const auto& ev : {small_list, large_list})
    CHECK_FALSE(reader.live_arrived("s", s.value(), live_of(ev), 0));
  // In the older list's place the newer one would pass what the connection may hold: the client
  // gets the older list, not neither.
  auto frames = reader.history_arrived("s", s.value(), {});
  REQUIRE(frames.size() == 2);
  CHECK(frames[1].find(protocol::to_hex(small_list.id)) != std::string::npos);
}

TEST_CASE("a connection's empty queue takes a frame larger than its bound; a queue holding anything is cut by one",
          "[actors][outbox]") {
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  {
    auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), 64 * 1024, metrics);
    outbox->send(std::string(100 * 1024, 'l')); // a member list larger than the bound
    CHECK_FALSE(outbox->closing());
    outbox->send(std::string(10, 'e'));
    CHECK(outbox->closing() == actors::close_reason::slow_reader);
  }
  io.restart();
  io.poll();
}

TEST_CASE("a queue of tiny frames counts what each holds beyond its payload", "[actors][outbox]") {
  // 64 KiB of EOSEs is 5,000 frames by payload and about ten times that in memory: a client
  // asking for subscriptions it never reads must be cut by what its queue holds.
  constexpr std::size_t bound = 64 * 1024;
  const std::string eose = R"(["EOSE","s"])";
  boost::asio::io_context io;
  auto metrics = std::make_shared<actors::relay_metrics>();
  {
    auto outbox = std::make_shared<actors::websocket_outbox>(boost::asio::make_strand(io), bound, metrics);
    std::size_t queued = 0;
    while (!outbox->closing() && queued < bound / eose.size()) {
      outbox->send(eose);
      ++queued;
    }
    CHECK(outbox->closing() == actors::close_reason::slow_reader);
    CHECK(queued <= bound / actors::outbound_frame::held_overhead() + 1);
    CHECK(actors::outbound_frame::held_overhead() >= sizeof(actors::outbound_frame));
  }
  io.restart();
  io.poll();
}
