// SPDX-License-Identifier: MIT
#include "tools/watch/relay_socket.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <stdexcept>

namespace comb::watch {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto connect_timeout = 10s;
constexpr auto user_agent = "comb-watch/0.1";

asio::awaitable<void> connect(beast::tcp_stream& stream, const relay_endpoint& relay) {
  tcp::resolver resolver(co_await asio::this_coro::executor);
  auto addresses = co_await resolver.async_resolve(relay.host, relay.port, asio::use_awaitable);
  stream.expires_after(connect_timeout);
  co_await stream.async_connect(addresses, asio::use_awaitable);
}

} // namespace

asio::awaitable<std::string> fetch_relay_pubkey(const relay_endpoint& relay) {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  co_await connect(stream, relay);
  http::request<http::empty_body> request{http::verb::get, relay.target, 11};
  request.set(http::field::host, relay.authority);
  request.set(http::field::accept, "application/nostr+json");
  request.set(http::field::user_agent, user_agent);
  stream.expires_after(connect_timeout);
  co_await http::async_write(stream, request, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  co_await http::async_read(stream, buffer, response, asio::use_awaitable);
  if (response.result() != http::status::ok)
    throw std::runtime_error("NIP-11 document: HTTP " + std::to_string(response.result_int()));
  auto self = relay_pubkey_from_info(response.body());
  if (!self)
    throw std::runtime_error("NIP-11 document has no valid `self` public key");
  co_return *self;
}

struct relay_socket::state {
  explicit state(asio::any_io_executor executor) : ws(executor), wake(executor) {}

  websocket::stream<beast::tcp_stream> ws;
  beast::flat_buffer buffer;
  std::deque<std::string> queue;
  // Never expires by itself: `send` cancels it to wake the writer.
  asio::steady_timer wake;
};

relay_socket::relay_socket(asio::any_io_executor executor)
  : state_(std::make_unique<state>(std::move(executor))) {}

relay_socket::~relay_socket() = default;

asio::awaitable<void> relay_socket::open(const relay_endpoint& relay) {
  auto& ws = state_->ws;
  co_await connect(beast::get_lowest_layer(ws), relay);
  // From here on the WebSocket's own timeouts apply, not the TCP stream's.
  beast::get_lowest_layer(ws).expires_never();
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = connect_timeout;
  // Pings after 30 s of silence; a relay that answers nothing for 60 s is gone.
  timeouts.idle_timeout = 60s;
  timeouts.keep_alive_pings = true;
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator(
    [](websocket::request_type& request) { request.set(http::field::user_agent, user_agent); }));
  ws.read_message_max(relay_frame_limits().max_message_bytes);
  co_await ws.async_handshake(relay.authority, relay.target, asio::use_awaitable);
}

asio::awaitable<std::string> relay_socket::read() {
  state_->buffer.clear();
  co_await state_->ws.async_read(state_->buffer, asio::use_awaitable);
  co_return beast::buffers_to_string(state_->buffer.data());
}

void relay_socket::send(std::string frame) {
  state_->queue.push_back(std::move(frame));
  state_->wake.cancel();
}

asio::awaitable<void> relay_socket::write_loop() {
  auto& s = *state_;
  for (;;) {
    while (!s.queue.empty()) {
      s.ws.text(true);
      co_await s.ws.async_write(asio::buffer(s.queue.front()), asio::use_awaitable);
      s.queue.pop_front();
    }
    s.wake.expires_at(asio::steady_timer::time_point::max());
    co_await s.wake.async_wait(asio::as_tuple(asio::use_awaitable));
    auto cancellation = co_await asio::this_coro::cancellation_state;
    if (cancellation.cancelled() != asio::cancellation_type::none)
      co_return;
  }
}

} // namespace comb::watch
