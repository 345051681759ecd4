// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>

#include "tools/watch/relay_protocol.hpp"

namespace comb::watch {

/// The relay's public key from its NIP-11 document (`GET <target>` with
/// `Accept: application/nostr+json`, field `self`). Throws on any failure.
[[nodiscard]] boost::asio::awaitable<std::string> fetch_relay_pubkey(const relay_endpoint& relay);

/// One ws:// WebSocket connection to the relay (Boost.Beast on Asio coroutines). Reads are
/// awaited one at a time; sends are queued and written in order by `write_loop`, because Beast
/// allows only one write in flight.
class relay_socket {
public:
  explicit relay_socket(boost::asio::any_io_executor executor);
  ~relay_socket();
  relay_socket(const relay_socket&) = delete;
  relay_socket& operator=(const relay_socket&) = delete;

  /// Resolves, connects and upgrades, with timeouts. Throws on failure.
  boost::asio::awaitable<void> open(const relay_endpoint& relay);

  /// The next text frame. Throws when the connection ends.
  boost::asio::awaitable<std::string> read();

  /// Queues a frame for `write_loop`.
  void send(std::string frame);

  /// Writes queued frames until cancelled; throws on a write error.
  boost::asio::awaitable<void> write_loop();

private:
  struct state;
  std::unique_ptr<state> state_;
};

} // namespace comb::watch
