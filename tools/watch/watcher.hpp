// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "protocol/signature.hpp"
#include "tools/watch/alert_reducer.hpp"
#include "tools/watch/command_runner.hpp"
#include "tools/watch/refetch_debouncer.hpp"
#include "tools/watch/relay_protocol.hpp"

namespace comb::watch {

class relay_socket;

struct watch_options {
  relay_endpoint relay;
  bool json = false;
  std::string exec_command;  ///< empty: none
};

/// The I/O shell around `alert_reducer`: keeps one connection to the relay (reconnecting with
/// backoff), authenticates, subscribes, feeds verified lists to the reducer, turns 8000 hints
/// into coalesced refetches and prints due alerts. Single-threaded: everything runs on `io`.
class watcher {
public:
  watcher(boost::asio::io_context& io, watch_options options, protocol::key_pair key,
          alert_reducer reducer);

  /// Runs until the io_context stops.
  boost::asio::awaitable<void> run();

  /// Prints what is pending at once (the ledger already holds it), for a clean shutdown.
  void flush_pending();

private:
  struct connection_state;

  boost::asio::awaitable<void> connect_forever();
  boost::asio::awaitable<bool> connect_once();
  boost::asio::awaitable<void> read_frames(connection_state& connection);
  boost::asio::awaitable<void> write_frames(connection_state& connection);
  boost::asio::awaitable<void> subscribe_without_challenge(connection_state& connection);
  boost::asio::awaitable<void> tick_forever();

  void on_frame(connection_state& connection, const relay_frame& frame);
  void on_event(connection_state& connection, const relay_frame& frame);
  void on_list(const protocol::event& ev);
  void subscribe(connection_state& connection);
  void on_tick();
  void rearm_ticker();
  void emit(const alert& a);

  boost::asio::io_context& io_;
  watch_options options_;
  protocol::key_pair key_;
  alert_reducer reducer_;
  refetch_debouncer refetch_;
  std::optional<command_runner> runner_;
  boost::asio::steady_timer ticker_;
  connection_state* live_ = nullptr;  ///< the open connection, if any, for refetches
  bool told_revoked_ = false;
};

} // namespace comb::watch
