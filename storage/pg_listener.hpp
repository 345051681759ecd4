// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

struct pg_conn;

namespace comb::storage {

/// What a listener reports: every (re)connection (after LISTEN took effect, so nothing
/// committed later is missed) and every notification payload. Called on the listener's strand;
/// keep them short (hand over to an actor).
struct pg_listener_events {
  std::function<void()> listening;
  std::function<void(std::string payload)> notified;
};

/// One dedicated libpq connection that LISTENs on a channel, driven by Asio: the socket
/// (PQsocket) is watched with a `stream_descriptor` that never owns it (libpq closes it);
/// readable input goes through PQconsumeInput and PQnotifies. Connects without blocking
/// (PQconnectStart/PQconnectPoll) and, whenever the connection fails, drops (a Postgres
/// restart, pg_terminate_backend) or stops answering (a frozen server, a link that forwards
/// nothing), connects again by itself with a doubling backoff.
/// Not copyable; create with std::make_shared and call start().
class pg_listener : public std::enable_shared_from_this<pg_listener> {
public:
  /// While listening, an empty query goes out this often; one still unanswered at the next
  /// drops the connection (problem() says so) and a new one is made.
  static constexpr std::chrono::seconds heartbeat_interval{5};

  pg_listener(boost::asio::io_context& io, std::string conninfo, std::string channel,
              pg_listener_events events);
  ~pg_listener();

  pg_listener(const pg_listener&) = delete;
  pg_listener& operator=(const pg_listener&) = delete;

  void start();
  /// Closes the connection; no callback runs afterwards.
  void stop();

  /// "" while listening; otherwise why not (for /readyz). Thread-safe.
  [[nodiscard]] std::string problem() const;

  /// How many times LISTEN took effect (1 after the first connect).
  [[nodiscard]] std::uint64_t listen_count() const noexcept { return listen_count_.load(); }

  /// The server process id of the listening connection; 0 when not listening. Thread-safe.
  [[nodiscard]] int backend_pid() const noexcept { return backend_pid_.load(); }

private:
  void connect();
  void wait_connect(int poll_status);
  void after_connect();
  void beat();
  void wait_readable();
  void on_readable();
  /// Reads what the server sent: results (LISTEN's, a heartbeat's) and notifications. False when
  /// the connection failed (fail() has run).
  bool drain();
  void fail(const std::string& why);
  void close_connection();
  void set_problem(std::string problem);
  bool rewatch_socket();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::posix::stream_descriptor socket_;
  boost::asio::steady_timer timer_;
  std::string conninfo_;
  std::string channel_;
  pg_listener_events events_;
  ::pg_conn* conn_ = nullptr;
  bool listening_ = false;
  bool heartbeat_due_ = false; ///< a heartbeat was sent and its answer has not come yet
  bool stopped_ = false;
  std::uint64_t generation_ = 0; ///< bumped per connection: stale handlers do nothing
  std::chrono::milliseconds backoff_{100};
  std::atomic<std::uint64_t> listen_count_{0};
  std::atomic<int> backend_pid_{0};
  mutable std::mutex problem_mutex_;
  std::string problem_ = "postgres: not connected yet";
};

} // namespace comb::storage
