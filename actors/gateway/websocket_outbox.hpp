// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "actors/frame_sink.hpp"
#include "actors/metrics.hpp"

namespace comb::actors {

/// A queued frame: a whole text frame (`text`), or a live event frame kept in parts (`head`, its
/// subscription's `["EVENT","<sub>",`, `json` the event JSON shared with the other subscribers,
/// then `]`).
struct outbound_frame {
  std::string text;
  std::shared_ptr<const std::string> head; ///< null for a whole frame
  std::shared_ptr<const std::string> json; ///< null for a whole frame

  /// The frame's payload length on the wire: what the outbox counts as pending.
  [[nodiscard]] std::size_t size() const noexcept {
    return json ? head->size() + json->size() + shared_event_frame::tail.size() : text.size();
  }
};

/// The bounded queue between a connection actor (any thread) and its socket's writer coroutine
/// (the socket's strand). Pending bytes count from `send` until the frame is written; a frame
/// that would take them past `max_bytes` cuts the connection instead of growing the queue.
/// The pending bytes of every outbox are summed in `relay_metrics::outbound_bytes`; past
/// `max_pod_bytes` a connection that holds `pod_share_bytes` or more is cut the same way.
/// A live event frame counts its whole length although its JSON is shared: the bound is on what
/// the connection still has to write, whoever else holds the same JSON.
class websocket_outbox final : public frame_sink,
                               public std::enable_shared_from_this<websocket_outbox> {
public:
  static constexpr std::size_t pod_share_bytes = 1024 * 1024;

  websocket_outbox(boost::asio::any_io_executor strand, std::size_t max_bytes,
                   std::shared_ptr<relay_metrics> metrics,
                   std::size_t max_pod_bytes = static_cast<std::size_t>(-1));
  ~websocket_outbox() override;

  void send(std::string frame) override;

  void send_event(shared_event_frame frame) override;

  void send_events(std::span<shared_event_frame> frames) override;

  void send_frames(std::vector<std::string> frames) override;

  void close(close_reason why) override;

  /// On the strand: waits for frames, then moves the oldest into `batch` (empty on entry), at
  /// most `max_frames` and, past the first, `max_bytes`. Returns false, with nothing moved, once
  /// the connection is closing (then `closing()` says why). Frames queued before a graceful
  /// close are still handed out. A burst leaves in one gathered write instead of one per frame.
  boost::asio::awaitable<bool> next_batch(std::vector<outbound_frame>& batch, std::size_t max_frames,
                                          std::size_t max_bytes);

  /// On the strand, after frames were written: they no longer count as pending. Returns the
  /// bytes still pending (0: the writer has nothing more to take for now).
  std::size_t written(std::size_t bytes);

  [[nodiscard]] std::optional<close_reason> closing() const;

  /// What to run on the strand when a reader falls past the bound (close its socket).
  void on_overflow(std::function<void()> abort);

  [[nodiscard]] std::size_t pending_bytes() const;

  [[nodiscard]] std::size_t queued_bytes() const override { return pending_bytes(); }

  [[nodiscard]] bool ending() const override { return closing().has_value(); }

private:
  void enqueue(outbound_frame frame);
  /// Under mutex_: queues `frame` or, past the bound, starts the slow-reader close; true then.
  [[nodiscard]] bool push(outbound_frame frame);
  /// Queues every frame of a batch under one lock and wakes the writer at most once.
  template <class Frame, class ToOutbound>
  void push_all(std::span<Frame> frames, ToOutbound to_outbound);
  /// After push: wakes the writer if it waits, or has it abort the socket on overflow.
  void after_push(bool wake_writer, bool overflow);
  void wake();
  void count(std::int64_t delta); // under mutex_
  void take_batch(std::vector<outbound_frame>& batch, std::size_t max_frames,
                  std::size_t max_bytes); // under mutex_
  [[nodiscard]] bool over_bound(std::size_t frame_bytes) const; // under mutex_

  boost::asio::any_io_executor strand_;
  boost::asio::steady_timer signal_;
  std::size_t max_bytes_;
  std::shared_ptr<relay_metrics> metrics_;
  std::size_t max_pod_bytes_;
  mutable std::mutex mutex_;
  std::deque<outbound_frame> queue_;
  std::size_t pending_bytes_ = 0;
  /// `next_batch()` found the queue empty and waits (or is about to): the next frame must wake it.
  bool writer_waiting_ = false;
  std::optional<close_reason> closing_;
  std::function<void()> abort_;
};

} // namespace comb::actors
