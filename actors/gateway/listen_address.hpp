// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "protocol/result.hpp"

namespace comb::actors {

/// Every address a listen setting names: an IP address is itself, a host name is every address it
/// resolves to (`localhost` is usually 127.0.0.1 and ::1). Resolved at start, once. The error
/// names the setting, e.g. "COMB_LISTEN=nowhere.invalid:7777: cannot resolve nowhere.invalid: ...".
[[nodiscard]] protocol::result<std::vector<boost::asio::ip::tcp::endpoint>, std::string>
resolve_listen(std::string_view setting, const std::string& value);

/// Opens one listening acceptor per endpoint. With port 0 the first one picks a port and the
/// others take the same, so one number reaches them all. The error names the endpoint that
/// failed; the acceptors opened before it are closed again.
[[nodiscard]] std::optional<std::string>
listen_on_all(boost::asio::io_context& io, const std::vector<boost::asio::ip::tcp::endpoint>& where,
              int backlog, std::vector<boost::asio::ip::tcp::acceptor>& out);

/// resolve_listen then listen_on_all; throws std::runtime_error with the message (a start-up
/// error the caller logs).
std::vector<boost::asio::ip::tcp::acceptor> open_listeners(boost::asio::io_context& io,
                                                           std::string_view setting,
                                                           const std::string& value, int backlog);

} // namespace comb::actors
