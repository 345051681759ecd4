// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <caf/all.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <memory>
#include <optional>
#include <string>

#include "actors/connection/ip_table.hpp"
#include "actors/gateway/gateway_context.hpp"
#include "conf/ip_network.hpp"
#include "actors/gateway/http_routes.hpp"
#include "actors/gateway/session_table.hpp"
#include "actors/gateway/websocket_outbox.hpp"

namespace comb::actors {

class socket_pass;

/// A request to become a WebSocket, checked and about to be answered.
struct websocket_upgrade {
  http_request request;
  storage::community_row community; ///< its `host` is the name reached, which may be an alias
  std::unique_ptr<ip_table::slot> slot;
  std::string client;
};

/// The network edge: one port for WebSocket (NIP-01) and HTTP (NIP-11, probes, metrics).
/// Each accepted socket runs as coroutines on its own strand; a WebSocket gets a connection
/// actor and talks to it only through frames (inbound) and a bounded outbox (outbound).
class server {
public:
  /// Refused sockets answered at once (each kept up to 2 s so its client reads the status).
  static constexpr std::size_t max_answered_refusals = 256;

  server(boost::asio::io_context& io, std::shared_ptr<gateway_context> context);

  /// Binds every address COMB_LISTEN names and starts accepting. Throws std::runtime_error
  /// naming the address that cannot be resolved or bound (a start-up error).
  void start();

  /// Starts accepting on acceptors opened before (open_listeners), so the caller knows the
  /// bound port before anything depends on it.
  void start(std::vector<boost::asio::ip::tcp::acceptor> acceptors);

  /// The port actually bound (useful when listening on port 0; the same on every address).
  [[nodiscard]] unsigned short port() const { return port_; }

  /// Stops accepting; each connection closes with 1001 once everything it was asked is
  /// answered (connection_drain.hpp). stop() closes those still open after that.
  void drain();

  /// Stops accepting and closes every connection with 1001 after what is queued for it.
  void stop();

  /// Closes every connection of a community (archived or deleted) with 1008.
  void close_community(std::int64_t community_id);

  /// Tells every connection actor of the community that its access changed (access_atom).
  void recheck_community(std::int64_t community_id);

  /// Tells every connection actor still alive to exit (the last step of a shutdown).
  void end_remaining_actors();

  /// Open WebSocket connections right now.
  [[nodiscard]] std::size_t open_connections() const;

  /// NIP-86 calls waiting for the management actor's answer right now.
  [[nodiscard]] std::size_t management_calls_waiting() const;

  /// Runs accepted sockets on these contexts, in turn (each run by a thread of its own), rather
  /// than on the one the server accepts on. Call before start.
  void spread_sockets(std::vector<boost::asio::io_context*> contexts);

private:
  [[nodiscard]] boost::asio::io_context& next_socket_context();
  void stop_accepting();

  boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor);
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  /// Answers HTTP requests until the socket closes, or returns the one that asks for a WebSocket.
  boost::asio::awaitable<std::optional<websocket_upgrade>>
  serve_requests(boost::beast::tcp_stream& stream, conf::ip_address peer, std::unique_ptr<ip_table::slot> slot);
  /// `pass` counts the socket against max_connections until it closes.
  boost::asio::awaitable<void> run_websocket(std::unique_ptr<boost::beast::tcp_stream> stream,
                                             websocket_upgrade upgrade, std::unique_ptr<socket_pass> pass);

  boost::asio::io_context& io_;
  std::vector<boost::asio::io_context*> socket_contexts_;
  std::size_t next_socket_context_ = 0; ///< only the accept loops, all on io_, move it
  std::shared_ptr<gateway_context> context_;
  std::vector<boost::asio::ip::tcp::acceptor> acceptors_; ///< one per resolved listen address
  unsigned short port_ = 0;
  /// Every socket from accept to close, capped by max_connections (checked and counted at once).
  socket_gate sockets_;
  /// Refused sockets being answered: held outside `sockets_`, and capped themselves.
  socket_gate refusals_{max_answered_refusals};
  /// Per client address: its open sockets (capped) and its token buckets.
  std::shared_ptr<ip_table> addresses_;
  std::vector<conf::ip_network> trusted_proxies_;
  session_table sessions_;
};

} // namespace comb::actors
