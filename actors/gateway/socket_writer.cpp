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

/// Cuts a connection whose socket takes no byte for `limit` while the writer waits to write: a
/// peer that stops reading and keeps its connection open (a window it never opens, its own half
/// closed, or a frame sent now and then so that the idle timer never fires) would otherwise hold
/// its socket, its queue and its share of the pod's outbound bound for as long as it liked. One
/// timer, made at the first wait and re-armed only when it fires: a wait costs a clock read.
class stall_watch {
public:
  stall_watch(std::shared_ptr<websocket_outbox> outbox, std::chrono::seconds limit)
    : outbox_(std::move(outbox)), limit_(limit) {}
  stall_watch(const stall_watch&) = delete;
  stall_watch& operator=(const stall_watch&) = delete;

  /// The writer ended: its timer lets go of the outbox now, not when it would have fired.
  ~stall_watch() {
    if (state_)
      state_->timer.cancel();
  }

  /// Before a wait for the socket (room in it, or the gate Beast holds while it writes);
  /// `allowance` more where the wait covers a whole frame.
  void waiting(const asio::any_io_executor& strand, std::chrono::seconds allowance = {}) {
    if (!state_)
      state_ = std::make_shared<state>(strand);
    state_->deadline = asio::steady_timer::clock_type::now() + limit_ + allowance;
    if (!state_->armed)
      arm(state_, outbox_);
  }

  /// The socket took bytes (or the write ended).
  void progressed() {
    if (state_)
      state_->deadline = asio::steady_timer::time_point::max();
  }

private:
  struct state {
    explicit state(const asio::any_io_executor& strand) : timer(strand) {}
    asio::steady_timer timer;
    /// Of the current wait; max while the writer does not wait.
    asio::steady_timer::time_point deadline = asio::steady_timer::time_point::max();
    bool armed = false;
  };

  /// Fires at the current wait's deadline; a wait that began later is timed again.
  static void arm(const std::shared_ptr<state>& s, const std::shared_ptr<websocket_outbox>& outbox) {
    s->armed = true;
    s->timer.expires_at(s->deadline);
    s->timer.async_wait([s, outbox](error_code ec) {
      s->armed = false;
      if (ec || s->deadline == asio::steady_timer::time_point::max())
        return; // the writer is gone, or not waiting: its next wait arms the timer again
      if (asio::steady_timer::clock_type::now() < s->deadline)
        arm(s, outbox);
      else
        outbox->cut_stalled(); // closing the socket aborts the write that waits
    });
  }

  std::shared_ptr<websocket_outbox> outbox_;
  std::chrono::seconds limit_;
  std::shared_ptr<state> state_;
};

/// Every frame of `frames` in one gathered write, between (never inside) Beast's own writes.
/// The relay calls `sendmsg` itself: Asio hands at most 64 buffers (32 frames) to one call, so
/// a 100-event REQ reply took four, each waking the client. One coroutine, entering the gate
/// without another when it is free: each nested coroutine was a frame allocated per write.
/// `entered`: a direct write left the gate entered for this batch (gate_handed_over).
asio::awaitable<error_code> write_gathered(ws_stream& ws, const std::vector<outbound_frame>& frames,
                                           bool entered, stall_watch& stall) {
  gathered_buffers gathered(frames);
  std::shared_ptr<socket_write_gate> gate = ws.next_layer().gate();
  if (!entered && !gate->try_enter()) {
    stall.waiting(ws.get_executor());
    co_await gate->enter();
  }
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
        stall.waiting(ws.get_executor());
        auto [write_ec, n] = co_await socket.async_write_some(gathered.next_buffers(), use_tuple);
        stall.progressed();
        ec = write_ec;
        gathered.advance(n);
      }
    }
  }
  stall.progressed();
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
                                           const websocket_outbox& outbox, stall_watch& stall) {
  cork.hold(outbox.pending_bytes() > frame.charge());
  ws.text(true);
  // Beast writes a frame whole, so here the watch times the whole frame, not each part: a reader
  // that keeps taking a large frame at 1 KiB a second or more is not cut for its length.
  stall.waiting(ws.get_executor(), std::chrono::seconds(frame.size() / 1024));
  auto [ec, n] = co_await ws.async_write(payload_of(frame), use_tuple);
  stall.progressed();
  if (outbox.pending_bytes() <= frame.charge())
    cork.hold(false);
  co_return ec;
}

std::size_t charge_of(const std::vector<outbound_frame>& frames) {
  std::size_t charged = 0;
  for (const auto& frame : frames)
    charged += frame.charge();
  return charged;
}

asio::awaitable<void> close_socket(ws_stream& ws, std::optional<close_reason> closing) {
  auto why = closing.value_or(close_reason::going_away);
  if (is_cut(why)) {
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
    case close_reason::stalled_reader: return "stalled reader: its socket took nothing for the idle timeout";
    case close_reason::internal_error: return "internal error (the connection's actor failed)";
  }
  return "unknown";
}

asio::awaitable<void> write_loop(std::shared_ptr<ws_stream> ws, std::shared_ptr<websocket_outbox> outbox,
                                 frame_writing how, std::chrono::seconds stall_limit) {
  burst_cork cork(*ws);
  stall_watch stall(outbox, stall_limit);
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
      ec = co_await write_gathered(*ws, batch, outbox->gate_handed_over(), stall);
    else
      ec = co_await write_by_beast(*ws, cork, batch.front(), *outbox, stall);
    std::size_t still_pending = outbox->written(charge_of(batch));
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
