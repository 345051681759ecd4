// SPDX-License-Identifier: MIT
#include "actors/gateway/metrics_listener.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "actors/gateway/http_routes.hpp"
#include "actors/gateway/listen_address.hpp"

namespace comb::actors {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

/// Scrapers are few and local: one request at a time each, a short deadline, small requests.
constexpr auto request_deadline = std::chrono::seconds(10);

} // namespace

metrics_listener::metrics_listener(asio::io_context& io, std::shared_ptr<gateway_context> context)
  : io_(io), context_(std::move(context)) {}

void metrics_listener::start(const std::string& listen) {
  acceptors_ = open_listeners(io_, "COMB_METRICS_LISTEN", listen, 64);
  port_ = acceptors_.front().local_endpoint().port();
  for (auto& acceptor : acceptors_)
    asio::co_spawn(io_, accept_loop(acceptor), asio::detached);
}

void metrics_listener::stop() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    for (auto& acceptor : acceptors_)
      acceptor.close(ignored);
  });
}

asio::awaitable<void> metrics_listener::accept_loop(tcp::acceptor& acceptor) {
  asio::steady_timer backoff(io_);
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(io_), use_tuple);
    if (ec == asio::error::operation_aborted || !acceptor.is_open())
      co_return;
    if (ec) {
      backoff.expires_after(std::chrono::milliseconds(100)); // out of descriptors: do not spin
      co_await backoff.async_wait(use_tuple);
      continue;
    }
    if (!open_.try_enter()) {
      bump(context_->metrics->metrics_connections_refused);
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    auto executor = socket.get_executor();
    asio::co_spawn(executor, serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> metrics_listener::serve(tcp::socket socket) {
  gate_place place(open_);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer(8 * 1024 + 1024); // headers only: a chunk line or trailer gets no room
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(8 * 1024);
    parser.body_limit(0);
    stream.expires_after(request_deadline);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
    if (ec)
      co_return;
    http_request request = parser.release();
    http_response response = metrics_route(request, *context_);
    auto [write_ec, written] = co_await http::async_write(stream, response, use_tuple);
    if (write_ec || !request.keep_alive() || !response.keep_alive())
      co_return;
  }
}

} // namespace comb::actors
