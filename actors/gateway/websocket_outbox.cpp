// SPDX-License-Identifier: MIT
#include "actors/gateway/websocket_outbox.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace comb::actors {
namespace asio = boost::asio;

websocket_outbox::websocket_outbox(asio::any_io_executor strand, std::size_t max_bytes,
                                   std::shared_ptr<relay_metrics> metrics)
  : strand_(strand), signal_(strand), max_bytes_(max_bytes), metrics_(std::move(metrics)) {}

void websocket_outbox::send(std::string frame) {
  bool overflow = false;
  {
    std::lock_guard lock(mutex_);
    if (closing_)
      return;
    if (pending_bytes_ + frame.size() > max_bytes_) {
      // A reader this far behind is cut, not buffered: its queue is dropped at once.
      closing_ = close_reason::slow_reader;
      queue_.clear();
      bump(metrics_->slow_reader_disconnects);
      overflow = true;
    } else {
      pending_bytes_ += frame.size();
      queue_.push_back(std::move(frame));
    }
  }
  if (overflow)
    asio::post(strand_, [self = shared_from_this()] {
      if (self->abort_)
        self->abort_();
    });
  wake();
}

void websocket_outbox::on_overflow(std::function<void()> abort) {
  abort_ = std::move(abort);
}

void websocket_outbox::close(close_reason why) {
  {
    std::lock_guard lock(mutex_);
    if (closing_)
      return;
    closing_ = why;
  }
  wake();
}

void websocket_outbox::wake() {
  // Cancelling the timer on the strand wakes `next()`; a wake that comes before the wait is
  // harmless because `next()` looks at the queue before it waits, in the same strand turn.
  asio::post(strand_, [self = shared_from_this()] { self->signal_.cancel(); });
}

asio::awaitable<std::optional<std::string>> websocket_outbox::next() {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (closing_ == close_reason::slow_reader)
        co_return std::nullopt;
      if (!queue_.empty()) {
        std::string frame = std::move(queue_.front());
        queue_.pop_front();
        co_return frame;
      }
      if (closing_)
        co_return std::nullopt;
    }
    signal_.expires_at(asio::steady_timer::time_point::max());
    co_await signal_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

void websocket_outbox::written(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  pending_bytes_ -= std::min(bytes, pending_bytes_);
}

std::optional<close_reason> websocket_outbox::closing() const {
  std::lock_guard lock(mutex_);
  return closing_;
}

std::size_t websocket_outbox::pending_bytes() const {
  std::lock_guard lock(mutex_);
  return pending_bytes_;
}

} // namespace comb::actors
