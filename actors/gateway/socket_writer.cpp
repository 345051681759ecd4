// SPDX-License-Identifier: MIT
#include "actors/gateway/socket_writer.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <string>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "actors/gateway/gathered_buffers.hpp"

namespace comb::actors {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

/// Frames' room a writer keeps between writes once its queue is empty.
constexpr std::size_t kept_batch_room = 4;

/// Corks the socket while more frames wait behind the one being written, so a burst written
/// frame by frame through Beast leaves in full segments rather than one packet per frame; it
/// is uncorked, which sends what is held at once, whenever the queue runs dry.
class burst_cork {
public:
  explicit burst_cork(ws_stream& ws) : socket_(beast::get_lowest_layer(ws).socket()) {}

  void hold(bool more_waiting) {
    if (more_waiting == corked_)
      return;
    int on = more_waiting ? 1 : 0;
    // A socket that refuses it still works, one packet per frame.
    (void)::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    corked_ = more_waiting;
  }

private:
  tcp::socket& socket_;
  bool corked_ = false;
};

/// Every frame of `frames` in one gathered write, between (never inside) Beast's own writes.
/// The relay calls `sendmsg` itself: Asio hands at most 64 buffers (32 frames) to one call, so
/// a 100-event REQ reply took four, each waking the client. One coroutine, entering the gate
/// without another when it is free: each nested coroutine was a frame allocated per write.
/// `entered`: a direct write left the gate entered for this batch (gate_handed_over).
asio::awaitable<error_code> write_gathered(ws_stream& ws, const std::vector<outbound_frame>& frames,
                                           bool entered) {
  gathered_buffers gathered(frames);
  std::shared_ptr<socket_write_gate> gate = ws.next_layer().gate();
  if (!entered && !gate->try_enter())
    co_await gate->enter();
  error_code ec = websocket::error::closed;
  if (!gate->closed()) {
    ec = {};
    tcp::socket& socket = beast::get_lowest_layer(ws).socket();
    while (!ec && !gathered.done()) {
      ec = gathered.send_some(socket.native_handle());
      if (ec == boost::system::errc::interrupted) {
        ec = {};
      } else if (ec == asio::error::would_block) {
        // A full socket: Asio's own write waits for room, and tries again under the lock its
        // reactor holds for the socket's readiness, so no wake-up is lost in between.
        auto [write_ec, n] = co_await socket.async_write_some(gathered.next_buffers(), use_tuple);
        ec = write_ec;
        gathered.advance(n);
      }
    }
  }
  gate->leave();
  co_return ec;
}

/// A frame's payload as Beast takes it: the whole text, or head, shared JSON and `]`.
std::array<asio::const_buffer, 3> payload_of(const outbound_frame& frame) {
  if (!frame.json)
    return {asio::buffer(frame.text), asio::const_buffer(), asio::const_buffer()};
  return {asio::buffer(*frame.head), asio::buffer(*frame.json),
          asio::buffer(shared_event_frame::tail.data(), shared_event_frame::tail.size())};
}

asio::awaitable<error_code> write_by_beast(ws_stream& ws, burst_cork& cork, const outbound_frame& frame,
                                           const websocket_outbox& outbox) {
  cork.hold(outbox.pending_bytes() > frame.size());
  ws.text(true);
  auto [ec, n] = co_await ws.async_write(payload_of(frame), use_tuple);
  if (outbox.pending_bytes() <= frame.size())
    cork.hold(false);
  co_return ec;
}

std::size_t bytes_in(const std::vector<outbound_frame>& frames) {
  std::size_t bytes = 0;
  for (const auto& frame : frames)
    bytes += frame.size();
  return bytes;
}

asio::awaitable<void> close_socket(ws_stream& ws, std::optional<close_reason> closing) {
  auto why = closing.value_or(close_reason::going_away);
  if (why == close_reason::slow_reader) {
    // Its socket buffer is full, so not even a close frame would get through: drop it.
    beast::get_lowest_layer(ws).close();
    co_return;
  }
  websocket::close_reason reason(static_cast<websocket::close_code>(why), describe(why));
  co_await ws.async_close(reason, use_tuple);
}

} // namespace

const char* describe(std::optional<close_reason> why) {
  if (!why)
    return "client closed or went silent";
  switch (*why) {
    case close_reason::going_away: return "relay shutting down";
    case close_reason::policy: return "community archived or deleted";
    case close_reason::too_big: return "frame over the size limit";
    case close_reason::slow_reader: return "slow reader: outbound bound reached";
    case close_reason::internal_error: return "internal error (the connection's actor failed)";
  }
  return "unknown";
}

asio::awaitable<void> write_loop(std::shared_ptr<ws_stream> ws,
                                 std::shared_ptr<websocket_outbox> outbox, frame_writing how) {
  burst_cork cork(*ws);
  bool gathered = how == frame_writing::gathered;
  if (gathered)
    outbox->write_directly(beast::get_lowest_layer(*ws).socket().native_handle(), ws->next_layer().gate());
  std::vector<outbound_frame> batch;
  for (;;) {
    if (!co_await outbox->next_batch(batch, gathered ? max_frames_per_write : 1, max_bytes_per_write))
      break;
    error_code ec;
    // Not a conditional expression: g++ 12 miscompiles co_await inside `?:`.
    if (gathered)
      ec = co_await write_gathered(*ws, batch, outbox->gate_handed_over());
    else
      ec = co_await write_by_beast(*ws, cork, batch.front(), *outbox);
    std::size_t still_pending = outbox->written(bytes_in(batch));
    // While frames wait the batch's room is reused; once the queue runs dry the room of a burst
    // is released, so an idle connection keeps at most kept_batch_room frames' worth (a few
    // hundred bytes; allocating it anew for each write of a frame or two cost a malloc and a
    // free per write where the pod keeps up).
    if (still_pending == 0 && batch.capacity() > kept_batch_room)
      std::vector<outbound_frame>().swap(batch);
    else
      batch.clear();
    if (ec) {
      outbox->close(close_reason::going_away);
      outbox->stop_writing_directly();
      co_return;
    }
  }
  // Before the close: while the outbox holds its duplicate, closing the socket would not end
  // the connection.
  outbox->stop_writing_directly();
  co_await close_socket(*ws, outbox->closing());
}

} // namespace comb::actors
