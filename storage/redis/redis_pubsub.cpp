// SPDX-License-Identifier: MIT
// The public surface of redis_pubsub: any thread may call it, so each call either touches only
// atomics or posts to the strand. The hiredis side is in redis_link.cpp.
#include "storage/redis/redis_pubsub_impl.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <thread>

namespace comb::storage {
namespace {

namespace asio = boost::asio;

/// PUBLISHes accepted but not yet answered (queued to the strand, buffered, or on the wire).
/// Beyond it publish() fails fast, so a stalled Redis costs bounded memory.
constexpr std::uint64_t max_in_flight = 10'000;
/// And their bytes: an envelope may carry a 1 MiB event or a list of many members, so ten
/// thousand of them could hold gigabytes while Redis stalls (the inbound side has the same bound).
constexpr std::uint64_t max_in_flight_bytes = 256ull * 1024 * 1024;

/// How long stop() on a non-io thread waits for the strand to close the connections: only an
/// io_context that no longer runs makes it wait that long.
constexpr std::chrono::seconds stop_wait{5};

} // namespace

redis_pubsub::impl::impl(asio::io_context& context, options o,
                         std::function<void(std::string)> message_callback,
                         std::function<void(bool)> state_callback)
    : io(context), strand(asio::make_strand(context)), opts(std::move(o)),
      on_message(std::move(message_callback)), on_state(std::move(state_callback)),
      connect_timer(context), retry_timer(context), health_timer(context), resolver(context),
      backoff(opts.min_backoff) {}

// Frees the contexts only when stop() could not reach the strand (an io_context that stopped
// running); `stopped` is set by then, so no user callback runs from here.
redis_pubsub::impl::~impl() {
  close_links();
}

void redis_pubsub::impl::release_in_flight(std::uint64_t bytes) {
  --in_flight;
  in_flight_bytes -= bytes;
}

void redis_pubsub::impl::count_failed_in_flight(std::uint64_t bytes) {
  release_in_flight(bytes);
  ++stats.publish_failed;
}

void redis_pubsub::impl::deliver(std::string_view payload) {
  std::lock_guard lock(callback_mutex);
  if (stopped || !on_message)
    return;
  try {
    on_message(std::string(payload)); // the copy is inside the try: a huge payload may not fit
  } catch (...) { // hiredis's C frames are below us: nothing may unwind through them
  }
}

void redis_pubsub::impl::notify_state(bool up) {
  std::lock_guard lock(callback_mutex);
  if (stopped || !on_state)
    return;
  try {
    on_state(up);
  } catch (...) {
  }
}

redis_pubsub::redis_pubsub(asio::io_context& io, options opts,
                           std::function<void(std::string payload)> on_message,
                           std::function<void(bool up)> on_state)
    : impl_(
        std::make_shared<impl>(io, std::move(opts), std::move(on_message), std::move(on_state))) {}

redis_pubsub::~redis_pubsub() {
  stop();
}

std::optional<std::string> redis_pubsub::start() {
  auto& self = *impl_;
  if (self.stopped)
    return "redis_pubsub: start() after stop()";
  if (self.started.exchange(true))
    return "redis_pubsub: start() called twice";
  if (auto error = redis_detail::parse_redis_url(self.opts.url, self.endpoint))
    return error;
  if (self.opts.channel.empty())
    return "redis_pubsub: the channel name is empty";
  if (self.opts.min_backoff.count() <= 0 || self.opts.max_backoff < self.opts.min_backoff)
    return "redis_pubsub: backoff needs 0 < min_backoff <= max_backoff";
  try {
    asio::post(self.strand, [keep = impl_] { keep->begin_attempt(); });
  } catch (...) {
    return "redis_pubsub: out of memory";
  }
  return std::nullopt;
}

void redis_pubsub::publish(std::string payload) {
  auto& self = *impl_;
  // Never queue while down: the caller learns of the loss from the counter and on_state.
  if (self.stopped || !self.publisher_ready) {
    ++self.stats.publish_failed;
    return;
  }
  const std::uint64_t bytes = payload.size();
  const bool over_count = self.in_flight.fetch_add(1) >= max_in_flight;
  const bool over_bytes = self.in_flight_bytes.fetch_add(bytes) + bytes > max_in_flight_bytes;
  if (over_count || over_bytes) {
    self.count_failed_in_flight(bytes); // Redis is not keeping up: shed instead of buffering more
    return;
  }
  try {
    asio::post(self.strand,
               [keep = impl_, message = std::move(payload)] { keep->send_publish(message); });
  } catch (...) {
    self.count_failed_in_flight(bytes);
  }
}

void redis_pubsub::drain(std::chrono::milliseconds wait) {
  auto& self = *impl_;
  if (self.io.get_executor().running_in_this_thread())
    return; // the answers come on this very thread
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!self.stopped && self.publisher_ready && self.in_flight.load() > 0
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

void redis_pubsub::stop() {
  auto& self = *impl_;
  {
    std::lock_guard lock(self.callback_mutex); // waits for a callback running on another thread
    if (self.stopped.exchange(true))
      return;
  }
  try {
    if (self.io.get_executor().running_in_this_thread()) {
      // Blocking an io thread on the strand could deadlock a one-thread io_context. `stopped`
      // already silences every callback; dispatch tears down inline when the strand is free.
      asio::dispatch(self.strand, [keep = impl_] { keep->shut_down(); });
      return;
    }
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    asio::post(self.strand, [keep = impl_, done] {
      keep->shut_down();
      done->set_value();
    });
    finished.wait_for(stop_wait);
  } catch (...) { // out of memory: ~impl frees the contexts once the last reference goes
  }
}

bool redis_pubsub::up() const noexcept {
  return impl_->is_up && !impl_->stopped;
}

const redis_stats& redis_pubsub::stats() const noexcept {
  return impl_->stats;
}

} // namespace comb::storage
