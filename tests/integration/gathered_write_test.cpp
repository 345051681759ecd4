// SPDX-License-Identifier: MIT
// The relay's gathered writes on real loopback sockets, read by a Beast client: frames of every
// length form arrive whole and in order, Beast's own pongs interleave with them without
// corrupting either, and the close code still reaches the client.
#include <catch2/catch.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "actors/gateway/socket_writer.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using namespace comb::actors;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct relay_side {
  std::shared_ptr<ws_stream> ws;
  std::shared_ptr<websocket_outbox> outbox;
};

/// Accepts one WebSocket, then runs the relay's writer and a reader (which answers pings).
asio::awaitable<void> serve_one(tcp::acceptor& acceptor, relay_side& side,
                                std::shared_ptr<relay_metrics> metrics, frame_writing how,
                                int send_buffer = 0) {
  auto socket = co_await acceptor.async_accept(use_tuple);
  if (send_buffer > 0) // a fixed size: the kernel no longer grows it to hold a whole burst
    std::get<1>(socket).set_option(asio::socket_base::send_buffer_size(send_buffer));
  auto executor = co_await asio::this_coro::executor;
  side.ws = std::make_shared<ws_stream>(beast::tcp_stream(std::move(std::get<1>(socket))));
  side.outbox = std::make_shared<websocket_outbox>(executor, 64 * 1024 * 1024, metrics);
  if (how == frame_writing::by_beast) {
    websocket::permessage_deflate deflate;
    deflate.server_enable = true;
    side.ws->set_option(deflate);
  }
  auto [ec] = co_await side.ws->async_accept(use_tuple);
  CHECK_FALSE(ec);
  asio::co_spawn(executor, write_loop(side.ws, side.outbox, how, std::chrono::seconds(60)), asio::detached);
  beast::flat_buffer buffer;
  for (;;) {
    auto [read_ec, n] = co_await side.ws->async_read(buffer, use_tuple);
    if (read_ec)
      co_return;
    buffer.consume(buffer.size());
  }
}

std::string payload(std::size_t size, std::size_t seed) {
  std::string text(size, 'a');
  for (std::size_t i = 0; i < size; ++i)
    text[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return text;
}

struct client_run {
  std::size_t gate_waits = 0; ///< writes that found the relay's socket busy
  std::uint64_t direct_writes = 0; ///< writes made by the thread that queued the frames
  std::vector<std::string> received;
  int pongs = 0;
  boost::system::error_code end;
  websocket::close_reason reason;
};

asio::awaitable<void> ping_often(websocket::stream<beast::tcp_stream>& client, int count) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (int i = 0; i < count; ++i) {
    auto [ec] = co_await client.async_ping({}, use_tuple);
    if (ec)
      co_return;
    pause.expires_after(std::chrono::microseconds(200));
    co_await pause.async_wait(use_tuple);
  }
}

/// A client that reads late through a small receive buffer, so the relay's writes fill the
/// socket and return partly written.
struct slow_start {
  int receive_buffer = 0; ///< bytes; 0 leaves the system's default
  std::chrono::milliseconds read_delay{0};
  int relay_send_buffer = 0; ///< bytes, the relay side's socket; 0 leaves the default
};

/// Connects, pings `pings` times while reading, and reads until the relay closes.
asio::awaitable<void> run_client(tcp::endpoint relay, int pings, client_run& run, slow_start slow = {}) {
  auto executor = co_await asio::this_coro::executor;
  websocket::stream<beast::tcp_stream> client(executor);
  websocket::permessage_deflate deflate;
  deflate.client_enable = true; // taken only where the relay offers it
  client.set_option(deflate);
  if (slow.receive_buffer > 0) {
    beast::get_lowest_layer(client).socket().open(tcp::v4());
    beast::get_lowest_layer(client).socket().set_option(
      asio::socket_base::receive_buffer_size(slow.receive_buffer));
  }
  co_await beast::get_lowest_layer(client).async_connect(relay, asio::use_awaitable);
  co_await client.async_handshake("127.0.0.1", "/", asio::use_awaitable);
  if (slow.read_delay.count() > 0) {
    asio::steady_timer pause(executor);
    pause.expires_after(slow.read_delay);
    co_await pause.async_wait(use_tuple);
  }
  client.control_callback([&run](websocket::frame_type kind, beast::string_view) {
    if (kind == websocket::frame_type::pong)
      ++run.pongs;
  });
  asio::co_spawn(executor, ping_often(client, pings), asio::detached);
  beast::flat_buffer buffer;
  for (;;) {
    auto [ec, n] = co_await client.async_read(buffer, use_tuple);
    if (ec) {
      run.end = ec;
      run.reason = client.reason();
      co_return;
    }
    CHECK(client.got_text());
    run.received.push_back(beast::buffers_to_string(buffer.data()));
    buffer.consume(buffer.size());
  }
}

/// Queues `frames` a part at a time, so that the writer's bursts and the client's pings overlap
/// in time, then closes the connection (1001).
asio::awaitable<void> queue_in_parts(std::shared_ptr<websocket_outbox> outbox,
                                     const std::vector<std::string>& frames, std::size_t part) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    outbox->send(frames[i]);
    if ((i + 1) % part == 0) {
      pause.expires_after(std::chrono::milliseconds(1));
      co_await pause.async_wait(use_tuple);
    }
  }
  outbox->close(close_reason::going_away);
}

/// Starts a relay side and a client on one io_context; `feed` fills the outbox once connected.
template <class Feed>
client_run exchange(int pings, Feed feed, frame_writing how = frame_writing::gathered,
                    slow_start slow = {}) {
  asio::io_context io;
  auto metrics = std::make_shared<relay_metrics>();
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  relay_side side;
  client_run run;
  asio::co_spawn(io, serve_one(acceptor, side, metrics, how, slow.relay_send_buffer), asio::detached);
  asio::co_spawn(io, run_client(acceptor.local_endpoint(), pings, run, slow), asio::detached);
  while (!side.outbox)
    io.run_one();
  while (!side.ws->is_open())
    io.run_one();
  feed(side.outbox, io);
  io.run_for(std::chrono::seconds(20));
  run.gate_waits = side.ws->next_layer().gate()->contended();
  run.direct_writes = metrics->direct_writes.load();
  return run;
}

} // namespace

TEST_CASE("gathered frames of every length form reach a Beast client whole, then the close code",
          "[gateway][websocket]") {
  std::vector<std::size_t> sizes{0, 1, 125, 126, 127, 65535, 65536, 200000, 3};
  std::vector<std::string> sent;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    sent.push_back(payload(sizes[i], i));
  auto run = exchange(0, [&](std::shared_ptr<websocket_outbox> outbox, asio::io_context&) {
    for (const auto& frame : sent)
      outbox->send(frame);
    outbox->close(close_reason::policy);
  });
  CHECK(run.received == sent);
  CHECK(run.end == websocket::error::closed);
  CHECK(run.reason.code == static_cast<std::uint16_t>(close_reason::policy));
  CHECK(std::string(run.reason.reason.data(), run.reason.reason.size()) == describe(close_reason::policy));
}

TEST_CASE("Beast's pongs interleave with gathered frames without corrupting either",
          "[gateway][websocket]") {
  constexpr int frames = 3000;
  constexpr int pings = 60;
  std::vector<std::string> sent;
  for (int i = 0; i < frames; ++i)
    sent.push_back(std::to_string(i) + ":" + payload(static_cast<std::size_t>(50 + (i * 37) % 900), static_cast<std::size_t>(i)));
  // A small send buffer: writes often find the socket full and hold the gate while they wait.
  auto run = exchange(
    pings,
    [&](std::shared_ptr<websocket_outbox> outbox, asio::io_context& io) {
      asio::co_spawn(io, queue_in_parts(outbox, sent, 100), asio::detached);
    },
    frame_writing::gathered, slow_start{4096, std::chrono::milliseconds(0), 4096});
  INFO(run.end.message() << " received " << run.received.size());
  REQUIRE(run.received.size() == sent.size());
  CHECK(run.received == sent);
  CHECK(run.pongs > 0);
  CHECK(run.gate_waits > 0); // a pong (or a burst) did wait for the other: the race happened
  CHECK(run.direct_writes > 0); // and frames queued while the writer idled went out at once
  CHECK(run.reason.code == static_cast<std::uint16_t>(close_reason::going_away));
}

TEST_CASE("with permessage-deflate offered, Beast frames each message and pongs still interleave",
          "[gateway][websocket]") {
  // Not longer: Beast 1.81's deflate itself corrupts message 466 of this sequence, on a plain
  // tcp_stream as well (the client reads "invalid stored block length").
  std::vector<std::string> sent;
  for (int i = 0; i < 300; ++i)
    sent.push_back(std::to_string(i) + ":" + payload(static_cast<std::size_t>(100 + i * 13), static_cast<std::size_t>(i)));
  auto run = exchange(
    20,
    [&](std::shared_ptr<websocket_outbox> outbox, asio::io_context& io) {
      asio::co_spawn(io, queue_in_parts(outbox, sent, 50), asio::detached);
    },
    frame_writing::by_beast);
  INFO(run.end.message() << " received " << run.received.size());
  CHECK(run.received == sent);
  CHECK(run.reason.code == static_cast<std::uint16_t>(close_reason::going_away));
}

namespace {

/// Every third frame is a whole text; the others are live event frames sharing one of a few
/// JSON payloads (lengths around the header's 125 / 65535 steps), as the fan-out sends them.
struct mixed_frames {
  std::vector<std::string> expected;
  std::vector<std::optional<shared_event_frame>> events; ///< empty where `expected` is whole
};

mixed_frames mix_shared_and_whole(int count) {
  std::vector<std::shared_ptr<const std::string>> shared;
  for (std::size_t size : {1u, 100u, 123u, 124u, 125u, 126u, 500u, 65530u, 65536u, 70000u})
    shared.push_back(std::make_shared<const std::string>(payload(size, size)));
  mixed_frames mixed;
  for (int i = 0; i < count; ++i) {
    if (i % 3 == 0) {
      mixed.expected.push_back(std::to_string(i) + ":" + payload(static_cast<std::size_t>(i % 300), 7));
      mixed.events.emplace_back();
      continue;
    }
    shared_event_frame frame{std::make_shared<const std::string>("[\"EVENT\",\"s" + std::to_string(i) + "\","),
                             shared[static_cast<std::size_t>(i) % shared.size()]};
    mixed.expected.push_back(frame.flattened());
    mixed.events.emplace_back(std::move(frame));
  }
  return mixed;
}

asio::awaitable<void> queue_mixed(std::shared_ptr<websocket_outbox> outbox, const mixed_frames& mixed,
                                  std::size_t part) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (std::size_t i = 0; i < mixed.expected.size(); ++i) {
    if (mixed.events[i])
      outbox->send_event(*mixed.events[i]);
    else
      outbox->send(mixed.expected[i]);
    if ((i + 1) % part == 0) {
      pause.expires_after(std::chrono::milliseconds(1));
      co_await pause.async_wait(use_tuple);
    }
  }
  outbox->close(close_reason::going_away);
}

} // namespace

TEST_CASE("live event frames sharing one JSON arrive whole and in order among whole frames",
          "[gateway][websocket]") {
  for (auto how : {frame_writing::gathered, frame_writing::by_beast}) {
    // Fewer through Beast's deflate, which corrupts long sequences itself (see above).
    auto mixed = mix_shared_and_whole(how == frame_writing::gathered ? 600 : 150);
    auto run = exchange(10, [&](std::shared_ptr<websocket_outbox> outbox, asio::io_context& io) {
      asio::co_spawn(io, queue_mixed(outbox, mixed, 40), asio::detached);
    }, how);
    INFO("by_beast " << (how == frame_writing::by_beast) << " received " << run.received.size());
    REQUIRE(run.received.size() == mixed.expected.size());
    CHECK(run.received == mixed.expected);
    CHECK(run.reason.code == static_cast<std::uint16_t>(close_reason::going_away));
  }
}

namespace {

/// After `after`, notes what the outbox still holds, then closes it (1001).
asio::awaitable<void> note_pending_then_close(std::shared_ptr<websocket_outbox> outbox,
                                              std::chrono::milliseconds after, std::size_t& pending) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  pause.expires_after(after);
  co_await pause.async_wait(use_tuple);
  pending = outbox->pending_bytes();
  outbox->close(close_reason::going_away);
}

} // namespace

TEST_CASE("a history chunk queued in one call reaches a late, slow reader whole across partial writes",
          "[gateway][websocket]") {
  // 3,000 frames of 400-1,400 bytes (about 2.7 MB) through 16 KiB of send buffer into 4 KiB of
  // receive buffer that nobody reads for 300 ms: the gathered writes (up to 31 frames, 64 KiB)
  // meet a full socket, are taken in part, and must go on from the middle of a frame.
  std::vector<std::string> sent;
  for (int i = 0; i < 3000; ++i)
    sent.push_back(std::to_string(i) + ":" + payload(static_cast<std::size_t>(400 + (i * 53) % 1000), static_cast<std::size_t>(i)));
  std::size_t pending_while_unread = 0;
  auto run = exchange(
    0,
    [&](std::shared_ptr<websocket_outbox> outbox, asio::io_context& io) {
      outbox->send_frames(sent);
      asio::co_spawn(io, note_pending_then_close(outbox, std::chrono::milliseconds(150),
                                                 pending_while_unread),
                     asio::detached);
    },
    frame_writing::gathered, slow_start{4096, std::chrono::milliseconds(300), 16384});
  CHECK(pending_while_unread > 0); // the socket was full: the writes could only be partial
  REQUIRE(run.received.size() == sent.size());
  CHECK(run.received == sent);
  CHECK(run.reason.code == static_cast<std::uint16_t>(close_reason::going_away));
}

namespace {

/// Pauses a producer until the socket's writer has drained the queue and waits, so that the
/// next frame finds it idle and is written directly (a fixed sleep left that to the scheduler).
void wait_until_writer_idle(const websocket_outbox& outbox) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!outbox.writer_idle() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

} // namespace

TEST_CASE("frames queued from another thread arrive whole and in order, written there or by the writer",
          "[gateway][websocket]") {
  // As a connection actor or storage writer queues them: off the socket's thread, which runs
  // the writer and answers pings meanwhile. Small buffers make writes partial on both sides.
  // Every 50 frames the producer waits for the writer to idle, so frames go out both ways.
  constexpr int frames = 4000;
  auto mixed = mix_shared_and_whole(frames);
  std::thread producer;
  auto run = exchange(
    40,
    [&](std::shared_ptr<websocket_outbox> outbox, asio::io_context&) {
      producer = std::thread([&mixed, outbox] {
        for (std::size_t i = 0; i < mixed.expected.size(); ++i) {
          if (mixed.events[i])
            outbox->send_event(*mixed.events[i]);
          else
            outbox->send(mixed.expected[i]);
          if (i % 50 == 49)
            wait_until_writer_idle(*outbox);
        }
        outbox->close(close_reason::going_away);
      });
    },
    frame_writing::gathered, slow_start{16384, std::chrono::milliseconds(0), 16384});
  producer.join();
  INFO(run.end.message() << " received " << run.received.size());
  REQUIRE(run.received.size() == mixed.expected.size());
  CHECK(run.received == mixed.expected);
  CHECK(run.direct_writes > 0);
  CHECK(run.reason.code == static_cast<std::uint16_t>(close_reason::going_away));
}

TEST_CASE("a Beast write waiting at the gate when its stream is destroyed ends aborted, touching nothing",
          "[gateway][websocket]") {
  // Beast's keep-alive ping is the one write nothing owning the stream waits for: behind a
  // relay write held up by a full socket, it can outlive the session that closed the socket.
  asio::io_context io(1);
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  auto stream = std::make_unique<gathering_stream>(beast::tcp_stream(acceptor.accept()));
  auto gate = stream->gate();
  REQUIRE(gate->try_enter()); // the relay's writer holds the socket
  const std::string ping("\x89\x00", 2);
  std::optional<boost::system::error_code> ended;
  std::size_t written = 99;
  stream->async_write_some(asio::buffer(ping), [&](boost::system::error_code ec, std::size_t n) {
    ended = ec;
    written = n;
  });
  io.poll(); // the write now waits for the gate
  REQUIRE_FALSE(ended);
  stream.reset(); // the session ended and took its stream with it
  gate->leave();
  io.run_for(std::chrono::seconds(5));
  REQUIRE(ended);
  CHECK(*ended == asio::error::operation_aborted);
  CHECK(written == 0);
  client.non_blocking(true);
  std::array<char, 8> got{};
  boost::system::error_code read_ec;
  CHECK(client.read_some(asio::buffer(got), read_ec) == 0); // the peer saw the close, no ping
}
