// SPDX-License-Identifier: MIT
#include "actors/gateway/websocket_outbox.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <ranges>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "actors/gateway/gathered_buffers.hpp"
#include "actors/gateway/gathering_stream.hpp"

namespace comb::actors {
namespace asio = boost::asio;

std::size_t websocket_outbox::pod_share(std::size_t max_pod_bytes, std::size_t max_connections) {
  return std::clamp(max_pod_bytes / std::max<std::size_t>(max_connections, 1), min_pod_share, max_pod_share);
}

websocket_outbox::websocket_outbox(asio::any_io_executor strand, std::size_t max_bytes,
                                   std::shared_ptr<relay_metrics> metrics, std::size_t max_pod_bytes,
                                   std::size_t pod_share)
  : strand_(strand),
    signal_(strand),
    max_bytes_(max_bytes),
    metrics_(std::move(metrics)),
    max_pod_bytes_(max_pod_bytes),
    pod_share_(pod_share) {}

websocket_outbox::~websocket_outbox() {
  std::lock_guard lock(mutex_);
  count(-static_cast<std::int64_t>(pending_bytes_));
  close_direct_fd();
}

void websocket_outbox::write_directly(int socket_fd, std::shared_ptr<socket_write_gate> gate) {
  int copy = ::fcntl(socket_fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0)
    return; // out of descriptors: the writer writes everything, as it always could
  std::lock_guard lock(mutex_);
  close_direct_fd();
  direct_fd_ = copy;
  gate_ = std::move(gate);
}

void websocket_outbox::stop_writing_directly() {
  std::lock_guard lock(mutex_);
  close_direct_fd();
  // The rest of a direct write was dropped with the queue of a cut reader: Beast's own writes
  // (a close frame) must not wait for it.
  if (std::exchange(gate_left_to_writer_, false))
    gate_->leave();
}

bool websocket_outbox::gate_handed_over() {
  std::lock_guard lock(mutex_);
  return std::exchange(gate_left_to_writer_, false);
}

void websocket_outbox::close_direct_fd() {
  if (direct_fd_ >= 0)
    ::close(direct_fd_);
  direct_fd_ = -1;
}

bool websocket_outbox::writer_needed(bool overflow) {
  if (!overflow) {
    if (!writer_waiting_ || queue_.empty())
      return false; // a busy writer takes the frames when it next looks
    if (direct_fd_ >= 0 && !closing_ && write_now())
      return false;
  }
  writer_waiting_ = false;
  return true;
}

bool websocket_outbox::write_now() {
  if (!gate_->try_enter())
    return false; // Beast writes (a pong): the writer waits for it
  if (gate_->closed()) {
    gate_->leave();
    return false;
  }
  std::size_t frames = 0;
  std::size_t bytes = 0;
  std::size_t charged = 0;
  while (frames < queue_.size() && frames < max_frames_per_write) {
    std::size_t size = queue_[frames].size();
    if (frames > 0 && bytes + size > max_bytes_per_write)
      break;
    bytes += size;
    charged += queue_[frames].charge();
    ++frames;
  }
  auto taken = std::ranges::subrange(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(frames));
  gathered_buffers gathered(taken);
  boost::system::error_code ec;
  do
    ec = gathered.send_some(direct_fd_);
  while ((!ec && !gathered.done()) || ec == boost::system::errc::interrupted);
  bump(metrics_->direct_writes);
  std::optional<outbound_frame> rest;
  if (gathered.done())
    gate_->leave();
  else
    rest = gathered.rest(); // the gate stays held: nothing may come between a frame's parts
  gate_left_to_writer_ = rest.has_value();
  queue_.erase(queue_.begin(), taken.end());
  auto left = static_cast<std::int64_t>(rest ? rest->charge() : 0);
  pending_bytes_ = pending_bytes_ - charged + static_cast<std::size_t>(left);
  count(left - static_cast<std::int64_t>(charged));
  // A full socket, or an error the writer meets again and ends the connection on.
  if (rest)
    queue_.push_front(std::move(*rest));
  return queue_.empty();
}

void websocket_outbox::count(std::int64_t delta) {
  metrics_->outbound_bytes.fetch_add(delta, std::memory_order_relaxed);
}

bool websocket_outbox::over_bound(std::size_t frame_bytes) const {
  // An empty queue takes any frame here too: a bound set below the largest event or member
  // list would otherwise cut every reader, quick ones included, on the first such frame.
  if (pending_bytes_ > 0 && pending_bytes_ + frame_bytes > max_bytes_)
    return true;
  // Past the pod's bound, the readers holding the most are cut first; small queues still grow,
  // so quick readers keep working while the slow ones are dropped. An empty queue takes any
  // frame: a quick reader is not cut for one large list or history chunk.
  auto pod = static_cast<std::size_t>(std::max<std::int64_t>(0, metrics_->outbound_bytes.load(std::memory_order_relaxed)));
  return pod + frame_bytes > max_pod_bytes_ && pending_bytes_ > 0 && pending_bytes_ + frame_bytes >= pod_share_;
}

void websocket_outbox::send(std::string frame) {
  enqueue({std::move(frame), nullptr, nullptr});
}

void websocket_outbox::send_event(shared_event_frame frame) {
  enqueue({{}, std::move(frame.head), std::move(frame.json)});
}

template <class Frame, class ToOutbound>
bool websocket_outbox::push_each(std::span<Frame> frames, ToOutbound to_outbound) {
  bool overflow = false;
  for (auto& frame : frames) {
    if (closing_)
      break;
    overflow = push(to_outbound(std::move(frame))) || overflow;
  }
  return overflow;
}

namespace {

outbound_frame shared_outbound(shared_event_frame&& frame) {
  return outbound_frame{{}, std::move(frame.head), std::move(frame.json), false,
                        std::move(frame.replaceable_address), frame.created_at};
}

outbound_frame whole_outbound(std::string&& frame) {
  return outbound_frame{std::move(frame), nullptr, nullptr};
}

} // namespace

template <class PushFrames>
void websocket_outbox::push_locked(PushFrames push_frames) {
  bool overflow = false;
  bool wake_writer = false;
  {
    std::lock_guard lock(mutex_);
    overflow = push_frames();
    wake_writer = writer_needed(overflow);
  }
  after_push(wake_writer, overflow);
}

void websocket_outbox::send_events(std::span<shared_event_frame> frames) {
  push_locked([&] { return push_each(frames, shared_outbound); });
}

void websocket_outbox::send_frames(std::vector<std::string> frames) {
  push_locked([&] { return push_each(std::span<std::string>(frames), whole_outbound); });
}

void websocket_outbox::send_reply(std::span<shared_event_frame> events, std::vector<std::string> closing) {
  push_locked([&] {
    const bool events_overflow = push_each(events, shared_outbound);
    return push_each(std::span<std::string>(closing), whole_outbound) || events_overflow;
  });
}

void websocket_outbox::enqueue(outbound_frame frame) {
  bool overflow = false;
  bool wake_writer = false;
  {
    std::lock_guard lock(mutex_);
    if (closing_)
      return;
    overflow = push(std::move(frame));
    // A writer that is busy takes this frame when it next looks at the queue: only one that
    // waits needs waking (a post to the strand per frame was a large part of a delivery's cost),
    // and not even that one when the frame could be written here.
    wake_writer = writer_needed(overflow);
  }
  after_push(wake_writer, overflow);
}

bool websocket_outbox::push(outbound_frame frame) {
  if (frame.replaceable_address)
    drop_superseded(frame);
  if (over_bound(frame.charge())) {
    // A reader this far behind is cut, not buffered: its queue is dropped at once (what is
    // being written now is counted until `written`).
    closing_ = close_reason::slow_reader;
    drop_queued_if([](const outbound_frame&) { return true; });
    bump(metrics_->slow_reader_disconnects);
    return true;
  }
  pending_bytes_ += frame.charge();
  count(static_cast<std::int64_t>(frame.charge()));
  queue_.push_back(std::move(frame));
  return false;
}

void websocket_outbox::after_push(bool wake_writer, bool overflow) {
  if (overflow)
    asio::post(strand_, [self = shared_from_this()] {
      if (self->abort_)
        self->abort_();
    });
  if (wake_writer)
    wake();
}

void websocket_outbox::on_overflow(std::function<void()> abort) {
  abort_ = std::move(abort);
}

void websocket_outbox::cut_stalled() {
  {
    std::lock_guard lock(mutex_);
    if (is_cut(closing_))
      return;
    closing_ = close_reason::stalled_reader;
    drop_queued_if([](const outbound_frame&) { return true; });
    bump(metrics_->stalled_reader_disconnects);
  }
  if (abort_)
    abort_();
}

void websocket_outbox::close(close_reason why) {
  {
    std::lock_guard lock(mutex_);
    if (closing_)
      return;
    closing_ = why;
    // Archived, deleted or closed to this reader: what it was sent before is not its to read.
    if (why == close_reason::policy)
      drop_queued_events();
  }
  wake();
}

void websocket_outbox::drop_superseded(const outbound_frame& newer) {
  std::size_t before = queue_.size();
  drop_queued_if([&](const outbound_frame& queued) {
    return queued.replaceable_address && !queued.framed && queued.head == newer.head
           && queued.created_at <= newer.created_at
           && *queued.replaceable_address == *newer.replaceable_address;
  });
  if (auto dropped = before - queue_.size())
    metrics_->superseded_frames_dropped.fetch_add(dropped, std::memory_order_relaxed);
}

void websocket_outbox::drop_events() {
  std::lock_guard lock(mutex_);
  drop_queued_events();
}

void websocket_outbox::drop_queued_events() {
  drop_queued_if([](const outbound_frame& frame) {
    // Events held for EOSE follow it as whole frames; what a write left of a frame stays.
    return frame.json || (!frame.framed && frame.text.starts_with(R"(["EVENT",)"));
  });
}

template <class Drop>
void websocket_outbox::drop_queued_if(Drop drop) {
  std::size_t dropped = 0;
  std::erase_if(queue_, [&](const outbound_frame& frame) {
    if (!drop(frame))
      return false;
    dropped += frame.charge();
    return true;
  });
  pending_bytes_ -= std::min(dropped, pending_bytes_);
  count(-static_cast<std::int64_t>(dropped));
}

void websocket_outbox::wake() {
  // Cancelling the timer on the strand wakes `next_batch()`; a wake that comes before the wait is
  // harmless because `next_batch()` looks at the queue before it waits, in the same strand turn.
  asio::post(strand_, [self = shared_from_this()] { self->signal_.cancel(); });
}

asio::awaitable<bool> websocket_outbox::next_batch(std::vector<outbound_frame>& batch,
                                                   std::size_t max_frames, std::size_t max_bytes) {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (is_cut(closing_))
        co_return false;
      if (!queue_.empty()) {
        take_batch(batch, max_frames, max_bytes);
        co_return true;
      }
      if (closing_)
        co_return false;
      writer_waiting_ = true;
    }
    signal_.expires_at(asio::steady_timer::time_point::max());
    co_await signal_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

void websocket_outbox::take_batch(std::vector<outbound_frame>& batch, std::size_t max_frames,
                                  std::size_t max_bytes) {
  std::size_t bytes = 0;
  batch.reserve(std::min(queue_.size(), max_frames));
  while (!queue_.empty() && batch.size() < max_frames) {
    std::size_t size = queue_.front().size();
    if (!batch.empty() && bytes + size > max_bytes)
      break;
    bytes += size;
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

std::size_t websocket_outbox::written(std::size_t charged) {
  std::lock_guard lock(mutex_);
  auto done = std::min(charged, pending_bytes_);
  pending_bytes_ -= done;
  count(-static_cast<std::int64_t>(done));
  return pending_bytes_;
}

std::optional<close_reason> websocket_outbox::closing() const {
  std::lock_guard lock(mutex_);
  return closing_;
}

std::size_t websocket_outbox::pending_bytes() const {
  std::lock_guard lock(mutex_);
  return pending_bytes_;
}

bool websocket_outbox::writer_idle() const {
  std::lock_guard lock(mutex_);
  return writer_waiting_ && queue_.empty();
}

} // namespace comb::actors
