// SPDX-License-Identifier: MIT
#include "actors/gateway/socket_writer.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cerrno>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
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

/// Each frame takes two buffers (prefix, payload) and a batch ending in a live event one more
/// (its `]`); one `sendmsg` takes them all (Linux allows 1,024), so a 100-event REQ reply leaves
/// in one call and wakes its reader once.
constexpr std::size_t max_frames_per_write = 255;
/// A write holds the socket's gate: a pong waits behind it, so one write stays modest.
constexpr std::size_t max_bytes_per_write = 256 * 1024;
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
/// copied. So a frame takes two buffers and a batch at most one more. A write of a few dozen
/// frames keeps its buffer list and scratch in the object (on the writer's coroutine frame,
/// which Asio recycles per thread), not on the heap.
class gathered_buffers {
public:
  static constexpr std::size_t inline_frames = 31;
  static constexpr std::size_t scratch_inline = 1024;
  static constexpr std::size_t asio_max_buffers = 64;

  /// `frames` holds at most max_frames_per_write (next_batch takes no more).
  explicit gathered_buffers(const std::vector<outbound_frame>& frames) {
    constexpr std::size_t header_max = sizeof(protocol::text_frame_header::bytes);
    std::size_t scratch_bytes = shared_event_frame::tail.size();
    for (const auto& frame : frames)
      scratch_bytes += shared_event_frame::tail.size() + header_max + (frame.json ? frame.head->size() : 0);
    scratch_.reserve(scratch_bytes);
    buffers_.reserve(2 * frames.size() + 1);
    // Offsets into scratch_ first: its data may move until it is complete.
    boost::container::small_vector<std::size_t, inline_frames + 1> prefix_at(frames.size() + 1);
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

  [[nodiscard]] bool done() const { return first_ == buffers_.size(); }

  /// One non-blocking `sendmsg` of what is left; moves past what it took. The error of a full
  /// socket is `would_block`.
  error_code send_some(int fd) {
    msghdr message{};
    message.msg_iov = buffers_.data() + first_;
    message.msg_iovlen = std::min<std::size_t>(buffers_.size() - first_, IOV_MAX);
    ssize_t sent = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK ? error_code(asio::error::would_block)
                                                     : error_code(errno, boost::system::system_category());
    advance(static_cast<std::size_t>(sent));
    return {};
  }

  /// What is left, as many buffers as Asio hands to one call.
  [[nodiscard]] std::array<asio::const_buffer, asio_max_buffers> next_buffers() const {
    std::array<asio::const_buffer, asio_max_buffers> next{};
    for (std::size_t i = 0; i < next.size() && first_ + i < buffers_.size(); ++i)
      next[i] = asio::const_buffer(buffers_[first_ + i].iov_base, buffers_[first_ + i].iov_len);
    return next;
  }

  void advance(std::size_t n) {
    // Past whole buffers, then the start of a partly written one.
    while (first_ < buffers_.size() && n >= buffers_[first_].iov_len)
      n -= buffers_[first_++].iov_len;
    if (first_ < buffers_.size()) {
      buffers_[first_].iov_base = static_cast<char*>(buffers_[first_].iov_base) + n;
      buffers_[first_].iov_len -= n;
    }
  }

private:
  void close_event(bool event_open) {
    if (event_open)
      append(shared_event_frame::tail.data(), shared_event_frame::tail.size());
  }

  void append(const char* data, std::size_t size) { scratch_.insert(scratch_.end(), data, data + size); }

  void add(const char* data, std::size_t size) {
    buffers_.push_back(iovec{const_cast<char*>(data), size});
  }

  boost::container::small_vector<char, scratch_inline> scratch_;
  boost::container::small_vector<iovec, 2 * inline_frames + 1> buffers_;
  std::size_t first_ = 0;
};

/// Every frame of `frames` in one gathered write, between (never inside) Beast's own writes.
/// The relay calls `sendmsg` itself: Asio hands at most 64 buffers (32 frames) to one call, so
/// a 100-event REQ reply took four, each waking the client. One coroutine, entering the gate
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
