// SPDX-License-Identifier: MIT
// The Asio/Beast side of comb-bench: an event loop and callback-driven WebSocket client links.
#include "tools/bench/ws_link.hpp"
#include "tools/bench/loop_impl.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>

namespace comb::bench {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::ip::tcp;

event_loop::event_loop() : impl_(std::make_unique<impl>()) {}

event_loop::~event_loop() {
  impl_->guard.reset();
  // Lets closing links finish their handlers without blocking for long.
  impl_->ioc.run_for(std::chrono::milliseconds(200));
}

bool event_loop::run_until(const std::function<bool()>& done, double max_seconds) {
  auto deadline = std::chrono::steady_clock::now()
                  + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(max_seconds));
  auto& ioc = impl_->ioc;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    ioc.run_for(std::chrono::milliseconds(5));
    if (ioc.stopped())
      ioc.restart();
  }
  return true;
}

void event_loop::after(double seconds, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(impl_->ioc);
  timer->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
    std::chrono::duration<double>(seconds)));
  timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec)
      fn();
  });
}

namespace {

class beast_link final : public link, public std::enable_shared_from_this<beast_link> {
public:
  beast_link(asio::io_context& ioc, link_handlers handlers)
    : ws_(ioc), handlers_(std::move(handlers)) {}

  void start(const endpoint& where, bool deflate) {
    if (deflate) {
      websocket::permessage_deflate pmd;
      pmd.client_enable = true;
      ws_.set_option(pmd);
    }
    ws_.read_message_max(64u << 20);
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
    asio::co_spawn(ws_.get_executor(), run(shared_from_this(), where),
                   finish_when_done(shared_from_this()));
  }

  void send(std::string frame) override {
    if (!open_)
      return;
    queue_.push_back(std::move(frame));
    if (!writing_) {
      writing_ = true;
      asio::co_spawn(ws_.get_executor(), write_all(shared_from_this()),
                     [self = shared_from_this()](std::exception_ptr) { self->writing_ = false; });
    }
  }

  void close() override {
    if (!open_ || closing_)
      return;
    closing_ = true;
    ws_.async_close(websocket::close_code::normal,
                    [self = shared_from_this()](const boost::system::error_code&) {
                      beast::error_code ignored;
                      beast::get_lowest_layer(self->ws_).socket().close(ignored);
                    });
  }

  bool is_open() const override { return open_; }

private:
  static asio::awaitable<void> run(std::shared_ptr<beast_link> self, endpoint where) {
    auto& ws = self->ws_;
    auto& tcp_layer = beast::get_lowest_layer(ws);
    tcp::resolver resolver(ws.get_executor());
    auto addresses = resolver.resolve(where.host, where.port);
    tcp_layer.expires_after(std::chrono::seconds(10));
    co_await tcp_layer.async_connect(addresses, asio::use_awaitable);
    tcp_layer.expires_never();
    tcp_layer.socket().set_option(tcp::no_delay(true));
    co_await ws.async_handshake(where.authority, where.target, asio::use_awaitable);
    self->open_ = true;
    if (self->handlers_.on_open)
      self->handlers_.on_open();
    beast::flat_buffer buffer;
    for (;;) {
      buffer.clear();
      co_await ws.async_read(buffer, asio::use_awaitable);
      auto data = buffer.cdata();
      if (self->handlers_.on_text)
        self->handlers_.on_text(std::string_view(static_cast<const char*>(data.data()), data.size()));
    }
  }

  static asio::awaitable<void> write_all(std::shared_ptr<beast_link> self) {
    while (!self->queue_.empty() && self->open_) {
      self->ws_.text(true);
      co_await self->ws_.async_write(asio::buffer(self->queue_.front()), asio::use_awaitable);
      if (!self->queue_.empty())
        self->queue_.pop_front();
    }
  }

public:
  /// Ends the link once (from finish_when_done when its coroutine ends).
  void finish(const std::string& reason) {
    open_ = false;  // an in-flight write still owns queue_.front(); the queue goes with the link
    if (finished_)
      return;
    finished_ = true;
    if (handlers_.on_close)
      handlers_.on_close(reason);
    handlers_ = {};  // breaks cycles through captured shared_ptrs
  }

private:
  websocket::stream<beast::tcp_stream> ws_;
  link_handlers handlers_;
  std::deque<std::string> queue_;
  bool open_ = false, writing_ = false, closing_ = false, finished_ = false;
};

} // namespace

std::shared_ptr<link> open_link(event_loop& loop, const endpoint& where, bool deflate,
                                link_handlers handlers) {
  if (!deflate)
    return open_plain_link(loop, where, std::move(handlers));
  auto made = std::make_shared<beast_link>(loop.impl_->ioc, std::move(handlers));
  made->start(where, true);
  return made;
}

} // namespace comb::bench
