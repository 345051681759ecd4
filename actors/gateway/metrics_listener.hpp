// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/connection/ip_table.hpp"
#include "actors/gateway/gateway_context.hpp"

namespace comb::actors {

/// /metrics (and the probes) on an address of their own, COMB_METRICS_LISTEN, loopback by
/// default: never on a community's host, where anyone could read per-community counts.
class metrics_listener {
public:
  /// Connections served at once; past it a new one is closed unread (an address off loopback
  /// may be reached by anyone).
  static constexpr std::size_t max_open_connections = 64;

  metrics_listener(boost::asio::io_context& io, std::shared_ptr<gateway_context> context);

  /// Binds every address `listen` (host:port) names and starts serving; throws
  /// std::runtime_error naming the address when it cannot.
  void start(const std::string& listen);

  void stop();

  [[nodiscard]] unsigned short port() const { return port_; }

private:
  boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor);
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  std::shared_ptr<gateway_context> context_;
  std::vector<boost::asio::ip::tcp::acceptor> acceptors_; ///< one per resolved address
  unsigned short port_ = 0;
  /// Connections being served, at most max_open_connections.
  socket_gate open_{max_open_connections};
};

} // namespace comb::actors
