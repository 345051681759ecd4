// SPDX-License-Identifier: MIT
#include "actors/gateway/socket_refusals.hpp"

#include <array>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

namespace comb::actors {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using tcp_stream = boost::beast::tcp_stream;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

/// Ends a socket whose request (or its body) was not read, once its answer is written: closing
/// with bytes unread would send a reset, which can destroy the answer before the client reads
/// it. Our side ends, then what arrives is read and dropped, within the stream's deadline and
/// about two requests' bytes, until the client closes.
asio::awaitable<void> end_unread(tcp_stream& stream) {
  constexpr std::size_t max_dropped_bytes = 160 * 1024;
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  std::array<char, 4096> sink{};
  std::size_t dropped = 0;
  while (dropped < max_dropped_bytes) {
    auto [read_ec, got] = co_await stream.async_read_some(asio::buffer(sink), use_tuple);
    if (read_ec)
      break;
    dropped += got;
  }
}

} // namespace

http_response closing_text(unsigned version, http::status status, std::string body) {
  http_response response{status, version};
  response.set(http::field::server, "comb");
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.keep_alive(false);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

asio::awaitable<void> refuse_socket(tcp_stream& stream, socket_gate& refusals, relay_metrics& metrics,
                                    socket_refusal answer) {
  http_response response = closing_text(11, answer.status, answer.text);
  co_await refuse_unread(stream, refusals, metrics, response);
}

asio::awaitable<void> refuse_unread(tcp_stream& stream, socket_gate& refusals, relay_metrics& metrics,
                                    http_response& response) {
  if (!refusals.try_enter()) {
    bump(metrics.refusals_unanswered);
    co_return;
  }
  gate_place place(refusals);
  stream.expires_after(std::chrono::seconds(2));
  auto [ec, n] = co_await http::async_write(stream, response, use_tuple);
  if (!ec)
    co_await end_unread(stream);
}

socket_refusal refusal_for(ip_table::refusal why) {
  if (why == ip_table::refusal::too_many_addresses)
    return {http::status::service_unavailable, "relay: too many client addresses, retry shortly\n"};
  return {http::status::too_many_requests, "rate-limited: too many connections from your address\n"};
}

} // namespace comb::actors
