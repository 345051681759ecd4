// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/status.hpp>
#include <string>

#include "actors/connection/ip_table.hpp"
#include "actors/gateway/http_routes.hpp"
#include "actors/metrics.hpp"

namespace comb::actors {

// Answers to sockets the server will not serve, written so the client reads them: our side
// ends after the answer and what the client still sends is drained, never answered with a
// reset. Past the gate's places a flood of refused sockets is closed unanswered, never held.

/// A status and a text for a socket refused before its request was read.
struct socket_refusal {
  boost::beast::http::status status;
  const char* text;
};

/// A plain-text answer after which the socket closes (`Connection: close`), in HTTP `version`.
[[nodiscard]] http_response closing_text(unsigned version, boost::beast::http::status status, std::string body);

/// The answer to a socket refused by its address's or the pod's bounds.
[[nodiscard]] socket_refusal refusal_for(ip_table::refusal why);

/// Writes `answer` before any request was read, then ends the socket (`refusals` bounds how many
/// are answered at once; past it the socket is closed unanswered, counted).
boost::asio::awaitable<void> refuse_socket(boost::beast::tcp_stream& stream, socket_gate& refusals,
                                           relay_metrics& metrics, socket_refusal answer);

/// Writes `response` while the request's body is still unread, then ends the socket so that the
/// client reads it; bounded by `refusals` as refuse_socket is.
boost::asio::awaitable<void> refuse_unread(boost::beast::tcp_stream& stream, socket_gate& refusals,
                                           relay_metrics& metrics, http_response& response);

} // namespace comb::actors
