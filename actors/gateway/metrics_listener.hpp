// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "actors/gateway/gateway_context.hpp"

namespace comb::actors {

/// /metrics (and the probes) on an address of their own, COMB_METRICS_LISTEN, loopback by
/// default: never on a community's host, where anyone could read per-community counts.
class metrics_listener {
public:
  metrics_listener(boost::asio::io_context& io, std::shared_ptr<gateway_context> context);

  /// Binds `listen` (host:port) and starts serving; throws std::system_error when it cannot.
  void start(const std::string& listen);

  void stop();

  [[nodiscard]] unsigned short port() const { return port_; }

private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  std::shared_ptr<gateway_context> context_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
};

} // namespace comb::actors
