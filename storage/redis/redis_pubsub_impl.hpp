// SPDX-License-Identifier: MIT
#pragma once
// The inside of redis_pubsub, shared by redis_pubsub.cpp (the public surface: start, publish,
// stop) and redis_link.cpp (connections, reconnects, PUBLISH and the hiredis callbacks).

#include "storage/redis/hiredis_asio.hpp"
#include "storage/redis/redis_pubsub.hpp"
#include "storage/redis/redis_url.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <string_view>

struct redisAsyncContext;

namespace comb::storage {

/// hiredis 0.14 has no connect timeout in async mode: an attempt that has not connected both
/// links and confirmed the SUBSCRIBE by then is abandoned and retried. While up, the same period
/// paces a PING on the publisher: one unanswered for a whole period means a frozen or
/// unreachable server, which TCP alone would not report for minutes.
inline constexpr std::chrono::seconds redis_timeout{2};

/// Everything but the atomics and the callback mutex is touched on `strand` only (hiredis is not
/// thread-safe); public calls post there.
struct redis_pubsub::impl : std::enable_shared_from_this<impl> {
  /// One hiredis connection, `ac` null while closed. hiredis callbacks compare their context
  /// with `ac`, so events from a context that we are already discarding are ignored.
  struct link {
    impl* owner;
    redisAsyncContext* ac = nullptr;
    bool ready = false; ///< publisher: connected and logged in; subscriber: SUBSCRIBE confirmed
    bool connected = false;
    int introduction = 0; ///< AUTH/SELECT replies still awaited
  };

  impl(boost::asio::io_context& context, options o,
       std::function<void(std::string)> message_callback, std::function<void(bool)> state_callback);
  ~impl();

  boost::asio::io_context& io;
  redis_detail::strand_type strand;
  const options opts;
  redis_detail::redis_endpoint endpoint; ///< written by start() before anything is posted
  const std::function<void(std::string)> on_message;
  const std::function<void(bool)> on_state;
  redis_stats stats;

  // Read from any thread.
  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};
  std::atomic<bool> is_up{false};
  std::atomic<bool> publisher_ready{false};
  std::atomic<std::uint64_t> in_flight{0}; ///< PUBLISHes accepted and not yet answered
  std::atomic<std::uint64_t> in_flight_bytes{0}; ///< their payloads' bytes
  /// Held while a user callback runs; stop() takes it, so none runs once stop() has returned.
  /// Recursive because a callback may itself call stop().
  std::recursive_mutex callback_mutex;

  // Strand only.
  link subscriber{this};
  link publisher{this};
  boost::asio::steady_timer connect_timer;
  boost::asio::steady_timer retry_timer;
  boost::asio::steady_timer health_timer;
  bool ping_outstanding = false;
  boost::asio::ip::tcp::resolver resolver;
  std::chrono::milliseconds backoff;
  std::uint64_t attempt = 0; ///< bumped whenever an attempt ends, so its late events are ignored

  template <class F> auto on_strand(F&& f) {
    return boost::asio::bind_executor(strand, std::forward<F>(f));
  }

  // redis_link.cpp: everything that calls hiredis.
  void begin_attempt();
  void arm_connect_timer();
  void open_links(const std::string& ip);
  bool open(link& l, const std::string& ip);
  void check_up();
  void check_health();
  void connection_lost();
  void close_links();
  void shut_down();
  void send_publish(const std::string& payload);
  bool introduce(link& l);
  void publisher_maybe_ready(link& l);
  static link& link_of(const redisAsyncContext* ac);
  // hiredis callbacks: C function pointers, so nothing may unwind through them (only running
  // out of memory could throw there, and that terminates).
  static void on_connected(const redisAsyncContext* ac, int status) noexcept;
  static void on_disconnected(const redisAsyncContext* ac, int status) noexcept;
  static void on_subscriber_reply(redisAsyncContext* ac, void* reply, void* privdata) noexcept;
  static void on_publish_reply(redisAsyncContext* ac, void* reply, void* privdata) noexcept;
  static void on_ping_reply(redisAsyncContext* ac, void* reply, void* privdata) noexcept;
  static void on_introduction_reply(redisAsyncContext* ac, void* reply, void* privdata) noexcept;

  // redis_pubsub.cpp: bookkeeping and user callbacks.
  /// A PUBLISH of `bytes` accepted before is answered (or failed): its place is free again.
  void release_in_flight(std::uint64_t bytes);
  void count_failed_in_flight(std::uint64_t bytes);
  void deliver(std::string_view payload);
  void notify_state(bool up);
};

} // namespace comb::storage
