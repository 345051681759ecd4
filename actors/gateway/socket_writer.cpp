// SPDX-License-Identifier: MIT
#include "actors/gateway/socket_writer.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/container/small_vector.hpp>

#include "protocol/websocket_frame.hpp"

namespace comb::actors {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

/// Asio hands at most 64 buffers to one `sendmsg`; each frame takes two (prefix, payload) and a
/// batch ending in a live event one more (its `]`).
constexpr std::size_t max_frames_per_write = 31;
/// A write holds the socket's gate: a pong waits behind it, so one write stays modest.
constexpr std::size_t max_bytes_per_write = 64 * 1024;
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

/// The buffers of one gathered write. Each frame's WebSocket header, and for a live event its
/// head (`["EVENT","<sub>",`), go into one scratch string, after the `]` that ends the event
/// before it; the payload (a whole frame's text, or the shared event JSON) is pointed at, never
/// copied. So a frame takes two buffers and a batch at most one more. The buffer list and, up to
/// `scratch_inline` bytes (a write of a few dozen live frames), the scratch live in the object
/// (on the writer's coroutine frame, which Asio recycles per thread), not on the heap: a write
/// of a few frames allocates nothing.
class gathered_buffers {
public:
  static constexpr std::size_t max_buffers = 2 * max_frames_per_write + 1;
  static constexpr std::size_t scratch_inline = 1024;

  /// `frames` holds at most max_frames_per_write (next_batch takes no more).
  explicit gathered_buffers(const std::vector<outbound_frame>& frames) {
    constexpr std::size_t header_max = sizeof(protocol::text_frame_header::bytes);
    std::size_t scratch_bytes = shared_event_frame::tail.size();
    for (const auto& frame : frames)
      scratch_bytes += shared_event_frame::tail.size() + header_max + (frame.json ? frame.head->size() : 0);
    scratch_.reserve(scratch_bytes);
    // Offsets into scratch_ first (buffers_ holds them as lengths until scratch_ is complete).
    std::array<std::size_t, max_frames_per_write + 1> prefix_at{};
    bool event_open = false;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      prefix_at[i] = scratch_.size();
      close_event(event_open);
      auto header = protocol::make_text_frame_header(frames[i].size());
      append(reinterpret_cast<const char*>(header.bytes.data()), header.size);
      if (frames[i].json)
        append(frames[i].head->data(), frames[i].head->size());
      event_open = frames[i].json != nullptr;
    }
    prefix_at[frames.size()] = scratch_.size();
    close_event(event_open);
    // Only now that scratch_ is complete: its data no longer moves.
    for (std::size_t i = 0; i < frames.size(); ++i) {
      add(scratch_.data() + prefix_at[i], prefix_at[i + 1] - prefix_at[i]);
      const auto& payload = frames[i].json ? *frames[i].json : frames[i].text;
      add(payload.data(), payload.size());
    }
    if (scratch_.size() > prefix_at[frames.size()])
      add(scratch_.data() + prefix_at[frames.size()], scratch_.size() - prefix_at[frames.size()]);
  }
  gathered_buffers(const gathered_buffers&) = delete;
  gathered_buffers& operator=(const gathered_buffers&) = delete;

  /// Mutable: write_gathered advances them past what a partial write sent.
  [[nodiscard]] std::span<asio::const_buffer> buffers() { return {buffers_.data(), count_}; }

private:
  void close_event(bool event_open) {
    if (event_open)
      append(shared_event_frame::tail.data(), shared_event_frame::tail.size());
  }

  void append(const char* data, std::size_t size) { scratch_.insert(scratch_.end(), data, data + size); }

  void add(const char* data, std::size_t size) { buffers_[count_++] = asio::const_buffer(data, size); }

  boost::container::small_vector<char, scratch_inline> scratch_;
  std::array<asio::const_buffer, max_buffers> buffers_;
  std::size_t count_ = 0;
};

/// Every frame of `frames` in one gathered write, between (never inside) Beast's own writes.
/// Each `sendmsg` takes as many buffers as Asio allows (64): `asio::async_write` hands at most
/// 16 to each call (its consuming_buffers), so a batch of 31 frames (62 buffers) left in four
/// `sendmsg` calls, and a 100-event REQ reply in about 13. One coroutine, entering the gate
/// without another when it is free: each nested coroutine was a frame allocated per write.
asio::awaitable<error_code> write_gathered(ws_stream& ws, const std::vector<outbound_frame>& frames) {
  gathered_buffers gathered(frames);
  std::shared_ptr<socket_write_gate> gate = ws.next_layer().gate();
  if (!gate->try_enter())
    co_await gate->enter();
  error_code ec = websocket::error::closed;
  if (!gate->closed()) {
    ec = {};
    tcp::socket& socket = beast::get_lowest_layer(ws).socket();
    std::span<asio::const_buffer> buffers = gathered.buffers();
    std::size_t first = 0;
    while (!ec && first < buffers.size()) {
      auto [write_ec, n] = co_await socket.async_write_some(buffers.subspan(first), use_tuple);
      ec = write_ec;
      // Past what was written: whole buffers, then the start of a partly written one.
      while (first < buffers.size() && n >= buffers[first].size())
        n -= buffers[first++].size();
      if (first < buffers.size())
        buffers[first] += n;
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
  }
  return "unknown";
}

asio::awaitable<void> write_loop(std::shared_ptr<ws_stream> ws,
                                 std::shared_ptr<websocket_outbox> outbox, frame_writing how) {
  burst_cork cork(*ws);
  bool gathered = how == frame_writing::gathered;
  std::vector<outbound_frame> batch;
  for (;;) {
    if (!co_await outbox->next_batch(batch, gathered ? max_frames_per_write : 1, max_bytes_per_write))
      break;
    error_code ec;
    // Not a conditional expression: g++ 12 miscompiles co_await inside `?:`.
    if (gathered)
      ec = co_await write_gathered(*ws, batch);
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
      co_return;
    }
  }
  co_await close_socket(*ws, outbox->closing());
}

} // namespace comb::actors
