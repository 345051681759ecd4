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

class socket_write_gate;

/// A queued frame: a whole text frame (`text`), or a live event frame kept in parts (`head`, its
/// subscription's `["EVENT","<sub>",`, `json` the event JSON shared with the other subscribers,
/// then `]`).
struct outbound_frame {
  std::string text;
  std::shared_ptr<const std::string> head; ///< null for a whole frame
  std::shared_ptr<const std::string> json; ///< null for a whole frame
  /// `text` is already WebSocket framing and payload: what a write left of its batch.
  bool framed = false;
  /// shared_event_frame's: a newer frame of the same address and subscription replaces it.
  std::shared_ptr<const std::string> replaceable_address = nullptr;
  std::int64_t created_at = 0;

  /// The frame's payload length on the wire.
  [[nodiscard]] std::size_t size() const noexcept {
    return json ? head->size() + json->size() + shared_event_frame::tail.size() : text.size();
  }

  /// What a queued frame holds beyond its payload: its place in the queue and its text's own
  /// allocation. An EOSE is 12 bytes on the wire and about ten times that in memory, so a bound
  /// on payloads alone let a flood of tiny frames hold far more than it says.
  [[nodiscard]] static constexpr std::size_t held_overhead() noexcept { return sizeof(outbound_frame) + 32; }

  /// What the outbox counts as pending for this frame, against its bound and the pod's.
  [[nodiscard]] std::size_t charge() const noexcept { return size() + held_overhead(); }
};

/// The bounded queue between a connection actor (any thread) and its socket's writer coroutine
/// (the socket's strand). Pending bytes (each frame's `charge`: its payload and what it holds
/// beyond it) count from `send` until the frame is written; a frame that would take them past
/// `max_bytes` cuts the connection instead of growing the queue.
/// The pending bytes of every outbox are summed in `relay_metrics::outbound_bytes`; past
/// `max_pod_bytes` a connection that holds `pod_share` or more is cut the same way (the pod's
/// bound over its connections: a share of a whole MiB each let 10,000 queues pass the bound ten
/// times over).
/// Once `write_directly` is on, a thread that queues frames while the writer idles writes them
/// itself: a reply or an OK then reaches the socket without waking the socket's thread, which
/// was one of the thread hand-offs a REQ paid for.
/// A live event frame counts its whole length although its JSON is shared: the bound is on what
/// the connection still has to write, whoever else holds the same JSON.
class websocket_outbox final : public frame_sink,
                               public std::enable_shared_from_this<websocket_outbox> {
public:
  static constexpr std::size_t max_pod_share = 1024 * 1024;
  static constexpr std::size_t min_pod_share = 64 * 1024;

  /// What each connection may hold once the pod is past `max_pod_bytes`: that bound spread over
  /// `max_connections`, within [min_pod_share, max_pod_share].
  [[nodiscard]] static std::size_t pod_share(std::size_t max_pod_bytes, std::size_t max_connections);

  websocket_outbox(boost::asio::any_io_executor strand, std::size_t max_bytes,
                   std::shared_ptr<relay_metrics> metrics,
                   std::size_t max_pod_bytes = static_cast<std::size_t>(-1),
                   std::size_t pod_share = max_pod_share);
  ~websocket_outbox() override;

  void send(std::string frame) override;

  void send_event(shared_event_frame frame) override;

  void send_events(std::span<shared_event_frame> frames) override;

  void send_frames(std::vector<std::string> frames) override;
  void send_reply(std::span<shared_event_frame> events, std::vector<std::string> closing) override;

  void close(close_reason why) override;

  void drop_events() override;

  /// On the strand: waits for frames, then moves the oldest into `batch` (empty on entry), at
  /// most `max_frames` and, past the first, `max_bytes`. Returns false, with nothing moved, once
  /// the connection is closing (then `closing()` says why). Frames queued before a graceful
  /// close are still handed out. A burst leaves in one gathered write instead of one per frame.
  boost::asio::awaitable<bool> next_batch(std::vector<outbound_frame>& batch, std::size_t max_frames,
                                          std::size_t max_bytes);

  /// On the strand, after frames were written: their charges (outbound_frame::charge) no longer
  /// count as pending. Returns what is still pending (0: nothing more to take for now).
  std::size_t written(std::size_t charged);

  [[nodiscard]] std::optional<close_reason> closing() const;

  /// After the WebSocket upgrade, where the relay frames every data frame itself (no extension):
  /// frames queued while the writer idles are written at once, by the queuing thread, on a
  /// duplicate of `socket_fd` that the outbox owns until `stop_writing_directly` (so the socket
  /// cannot be closed, and its number reused, under such a write), inside `gate`. On the strand.
  void write_directly(int socket_fd, std::shared_ptr<socket_write_gate> gate);

  /// The writer is ending: no more direct writes; closes the duplicate. On the strand.
  void stop_writing_directly();

  /// After `next_batch`: true when the batch begins with what a direct write left of a frame,
  /// and that write left the socket's gate entered for the writer, which leaves it once the
  /// rest is written (a pong between the two parts would corrupt the frame).
  [[nodiscard]] bool gate_handed_over();

  /// What to run on the strand when a reader is cut (past the bound, or stalled): close its socket.
  void on_overflow(std::function<void()> abort);

  /// On the strand: the socket took nothing for the idle timeout while frames waited. The
  /// connection is cut as a slow reader's is: its queue dropped, counted, and its socket closed
  /// by the `on_overflow` action. Nothing when it was cut already.
  void cut_stalled();

  [[nodiscard]] std::size_t pending_bytes() const;

  /// The writer found the queue empty and waits: a frame queued now is written by the caller
  /// (when the socket is handed over for direct writes and Beast is not writing).
  [[nodiscard]] bool writer_idle() const;

  [[nodiscard]] std::size_t queued_bytes() const override { return pending_bytes(); }

  [[nodiscard]] bool ending() const override { return closing().has_value(); }

private:
  void enqueue(outbound_frame frame);
  void drop_queued_events(); // under mutex_
  /// Drops what `newer` replaces: older frames of its address for its subscription (under mutex_).
  void drop_superseded(const outbound_frame& newer);
  /// Under mutex_: removes the queued frames `drop` picks, no longer counted as pending.
  template <class Drop>
  void drop_queued_if(Drop drop);
  /// Under mutex_: queues `frame` or, past the bound, starts the slow-reader close; true then.
  [[nodiscard]] bool push(outbound_frame frame);
  /// Runs `push_frames` (which queues frames and returns whether one overflowed) under one
  /// lock, then wakes the writer at most once.
  template <class PushFrames>
  void push_locked(PushFrames push_frames);
  /// Under mutex_: queues `frames` until the connection starts closing; true on overflow.
  template <class Frame, class ToOutbound>
  [[nodiscard]] bool push_each(std::span<Frame> frames, ToOutbound to_outbound);
  /// After push: wakes the writer if it waits, or has it abort the socket on overflow.
  void after_push(bool wake_writer, bool overflow);
  void wake();
  void count(std::int64_t delta); // under mutex_
  void take_batch(std::vector<outbound_frame>& batch, std::size_t max_frames,
                  std::size_t max_bytes); // under mutex_
  /// Under mutex_, after frames were queued: true when the writer must be woken for them (or,
  /// on `overflow`, to cut the connection); false when a busy writer will take them, or they
  /// were written here.
  [[nodiscard]] bool writer_needed(bool overflow);
  /// Under mutex_: writes what the queue holds (one gathered write's worth) on `direct_fd_`;
  /// true when the queue is empty after it. What the socket did not take stays queued first.
  [[nodiscard]] bool write_now();
  void close_direct_fd(); // under mutex_
  [[nodiscard]] bool over_bound(std::size_t frame_bytes) const; // under mutex_

  boost::asio::any_io_executor strand_;
  boost::asio::steady_timer signal_;
  std::size_t max_bytes_;
  std::shared_ptr<relay_metrics> metrics_;
  std::size_t max_pod_bytes_;
  std::size_t pod_share_;
  mutable std::mutex mutex_;
  std::deque<outbound_frame> queue_;
  std::size_t pending_bytes_ = 0;
  /// `next_batch()` found the queue empty and waits (or is about to): the next frame must wake it.
  bool writer_waiting_ = false;
  std::optional<close_reason> closing_;
  std::function<void()> abort_;
  int direct_fd_ = -1;                       ///< under mutex_
  bool gate_left_to_writer_ = false;         ///< under mutex_: see gate_handed_over
  std::shared_ptr<socket_write_gate> gate_;  ///< set with direct_fd_
};

} // namespace comb::actors
