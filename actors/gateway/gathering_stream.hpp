// SPDX-License-Identifier: MIT
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffer_traits.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <boost/beast/websocket/teardown.hpp>

namespace comb::actors {

/// One writer at a time on a socket: Beast's own writes (the handshake reply, pongs, keep-alive
/// pings, the close frame) and the relay's gathered data frames each go out whole before the
/// next begins, so their bytes never interleave. Beast's writes and the writer coroutine wait on
/// the socket's strand; a thread that queues frames while the socket is idle writes them itself
/// (websocket_outbox) with `try_enter`, from any thread. Shared so that a write still completing
/// after its stream is gone touches live state.
class socket_write_gate : public std::enable_shared_from_this<socket_write_gate> {
public:
  explicit socket_write_gate(boost::asio::any_io_executor strand) : strand_(std::move(strand)) {}

  /// On the strand.
  boost::asio::awaitable<void> enter() {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (!busy_) {
          busy_ = true;
          co_return;
        }
        ++waits_;
        ++waiting_;
      }
      // Made on the first wait only (rarely needed: a pong behind a burst), so an idle
      // connection holds no timer. It never expires: `leave` cancels it on the strand, which
      // wakes every waiter to look again. The look above and this wait share one strand turn,
      // so a cancel posted by `leave` meanwhile finds the wait.
      if (!wake_)
        wake_ = std::make_unique<boost::asio::steady_timer>(
          co_await boost::asio::this_coro::executor, boost::asio::steady_timer::time_point::max());
      co_await wake_->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      std::lock_guard lock(mutex_);
      --waiting_;
    }
  }

  /// Takes the socket if no one writes: the usual case, without the coroutine `enter` is
  /// (a frame allocated per write). False: the caller waits with `enter`, or leaves the frames
  /// to the writer. Any thread.
  [[nodiscard]] bool try_enter() {
    std::lock_guard lock(mutex_);
    if (busy_) {
      ++found_busy_;
      return false;
    }
    busy_ = true;
    return true;
  }

  /// Any thread.
  void leave() {
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      if (waiting_ == 0)
        return;
    }
    boost::asio::post(strand_, [self = shared_from_this()] {
      if (self->wake_)
        self->wake_->cancel();
    });
  }

  /// Times a writer found the socket busy, and waited or left its frames to the writer (tests
  /// make sure the race happens).
  [[nodiscard]] std::size_t contended() const {
    std::lock_guard lock(mutex_);
    return waits_ + found_busy_;
  }

  /// Beast has written a close frame: no data frame may follow it. Read inside the gate.
  [[nodiscard]] bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  void mark_closed() {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }

  /// The stream and its socket are destroyed: a write still waiting for the gate (Beast's
  /// keep-alive ping, which nothing owning the stream waits for) must not touch them. Both are
  /// destroyed on the socket's strand, where such a write runs.
  void mark_stream_gone() {
    std::lock_guard lock(mutex_);
    stream_gone_ = true;
  }
  [[nodiscard]] bool stream_gone() const {
    std::lock_guard lock(mutex_);
    return stream_gone_;
  }

private:
  boost::asio::any_io_executor strand_;
  mutable std::mutex mutex_;
  bool busy_ = false;
  bool closed_ = false;
  bool stream_gone_ = false;
  std::size_t waits_ = 0;
  std::size_t found_busy_ = 0;
  std::size_t waiting_ = 0;
  std::unique_ptr<boost::asio::steady_timer> wake_; ///< on the strand only
};

/// The layer between Beast's WebSocket stream and the TCP stream: reads pass through; Beast's
/// writes wait at the socket's write gate and are then written whole (a legal `write_some`:
/// it reports every byte written), so the relay may write its own frames between them with
/// `write_gathered` (socket_writer.cpp), many in one system call.
class gathering_stream {
public:
  using next_layer_type = boost::beast::tcp_stream;
  using executor_type = next_layer_type::executor_type;

  explicit gathering_stream(next_layer_type stream)
    : stream_(std::move(stream)),
      gate_(std::make_shared<socket_write_gate>(stream_.get_executor())) {}
  gathering_stream(gathering_stream&&) = default;
  gathering_stream& operator=(gathering_stream&&) = delete;
  ~gathering_stream() {
    if (gate_)
      gate_->mark_stream_gone();
  }

  executor_type get_executor() noexcept { return stream_.get_executor(); }
  next_layer_type& next_layer() noexcept { return stream_; }
  [[nodiscard]] const next_layer_type& next_layer() const noexcept { return stream_; }
  [[nodiscard]] const std::shared_ptr<socket_write_gate>& gate() const noexcept { return gate_; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return stream_.async_read_some(buffers, std::forward<Token>(token));
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    using signature = void(boost::system::error_code, std::size_t);
    return boost::asio::async_initiate<Token, signature>(
      [gate = gate_, &socket = stream_.socket()](auto handler, const ConstBuffers& bytes) {
        auto executor = socket.get_executor();
        boost::asio::co_spawn(
          executor, write_whole(gate, socket, bytes),
          [handler = std::move(handler)](std::exception_ptr error,
                                         std::tuple<boost::system::error_code, std::size_t> done) mutable {
            if (error)
              std::get<0>(done) = boost::asio::error::fault;
            std::move(handler)(std::get<0>(done), std::get<1>(done));
          });
      },
      token, buffers);
  }

private:
  template <class ConstBuffers>
  static boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>>
  write_whole(std::shared_ptr<socket_write_gate> gate, boost::asio::ip::tcp::socket& socket,
              ConstBuffers bytes) {
    co_await gate->enter();
    if (starts_close_frame(bytes))
      gate->mark_closed();
    auto done = co_await write_while_stream_lives(*gate, socket, bytes);
    gate->leave();
    co_return done;
  }

  /// Written a piece at a time, not with asio::async_write: the stream may be destroyed while a
  /// piece is on its way (its write then ends aborted), and each next piece looks first.
  template <class ConstBuffers>
  static boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>>
  write_while_stream_lives(const socket_write_gate& gate, boost::asio::ip::tcp::socket& socket,
                           const ConstBuffers& bytes) {
    boost::beast::buffers_suffix<ConstBuffers> rest(bytes);
    std::size_t written = 0;
    while (boost::beast::buffer_bytes(rest) > 0) {
      if (gate.stream_gone())
        co_return std::tuple{boost::system::error_code(boost::asio::error::operation_aborted), written};
      auto [ec, n] = co_await socket.async_write_some(rest, boost::asio::as_tuple(boost::asio::use_awaitable));
      written += n;
      if (ec)
        co_return std::tuple{ec, written};
      rest.consume(n);
    }
    co_return std::tuple{boost::system::error_code(), written};
  }

  /// A server's close frame starts with FIN + opcode 8; the handshake reply starts with "HTTP".
  template <class ConstBuffers>
  static bool starts_close_frame(const ConstBuffers& bytes) {
    for (auto it = boost::asio::buffer_sequence_begin(bytes);
         it != boost::asio::buffer_sequence_end(bytes); ++it) {
      boost::asio::const_buffer piece(*it);
      if (piece.size() > 0)
        return *static_cast<const unsigned char*>(piece.data()) == 0x88;
    }
    return false;
  }

  next_layer_type stream_;
  std::shared_ptr<socket_write_gate> gate_;
};

using ws_stream = boost::beast::websocket::stream<gathering_stream>;

// Beast's customisation points: closing a WebSocket tears down the TCP stream underneath.
inline void teardown(boost::beast::role_type role, gathering_stream& stream,
                     boost::system::error_code& ec) {
  using boost::beast::websocket::teardown;
  teardown(role, stream.next_layer(), ec);
}

template <class TeardownHandler>
void async_teardown(boost::beast::role_type role, gathering_stream& stream,
                    TeardownHandler&& handler) {
  using boost::beast::websocket::async_teardown;
  async_teardown(role, stream.next_layer(), std::forward<TeardownHandler>(handler));
}

} // namespace comb::actors
