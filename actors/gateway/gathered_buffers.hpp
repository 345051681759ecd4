// SPDX-License-Identifier: MIT
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/system/error_code.hpp>

#include "actors/gateway/websocket_outbox.hpp"
#include "protocol/websocket_frame.hpp"

namespace comb::actors {

/// Each frame takes two buffers (prefix, payload) and a batch ending in a live event one more
/// (its `]`); one `sendmsg` takes them all (Linux allows 1,024), so a 100-event REQ reply leaves
/// in one call and wakes its reader once.
inline constexpr std::size_t max_frames_per_write = 255;
/// A write holds the socket's gate: a pong waits behind it, so one write stays modest.
inline constexpr std::size_t max_bytes_per_write = 256 * 1024;

/// The buffers of one gathered write. Each frame's WebSocket header, and for a live event its
/// head (`["EVENT","<sub>",`), go into one scratch string, after the `]` that ends the event
/// before it; the payload (a whole frame's text, or the shared event JSON) is pointed at, never
/// copied. So a frame takes two buffers and a batch at most one more. A write of a few dozen
/// frames keeps its buffer list and scratch in the object (on the writer's coroutine frame,
/// which Asio recycles per thread), not on the heap. A frame already framed (what an earlier
/// write left of its batch) goes out as it is.
class gathered_buffers {
public:
  static constexpr std::size_t inline_frames = 31;
  static constexpr std::size_t scratch_inline = 1024;
  static constexpr std::size_t asio_max_buffers = 64;

  /// `frames` (a random-access range of outbound_frame) holds at most max_frames_per_write;
  /// they must outlive this object.
  template <class Frames>
  explicit gathered_buffers(const Frames& frames) {
    constexpr std::size_t header_max = sizeof(protocol::text_frame_header::bytes);
    std::size_t scratch_bytes = shared_event_frame::tail.size();
    for (const outbound_frame& frame : frames)
      scratch_bytes += shared_event_frame::tail.size() + header_max + (frame.json ? frame.head->size() : 0);
    scratch_.reserve(scratch_bytes);
    const std::size_t count = std::size(frames);
    buffers_.reserve(2 * count + 1);
    // Offsets into scratch_ first: its data may move until it is complete.
    boost::container::small_vector<std::size_t, inline_frames + 1> prefix_at(count + 1);
    bool event_open = false;
    for (std::size_t i = 0; i < count; ++i) {
      prefix_at[i] = scratch_.size();
      event_open = add_prefix(frames[i], event_open);
    }
    prefix_at[count] = scratch_.size();
    close_event(event_open);
    for (std::size_t i = 0; i < count; ++i) {
      if (prefix_at[i + 1] > prefix_at[i])
        add(scratch_.data() + prefix_at[i], prefix_at[i + 1] - prefix_at[i]);
      const auto& payload = frames[i].json ? *frames[i].json : frames[i].text;
      add(payload.data(), payload.size());
    }
    if (scratch_.size() > prefix_at[count])
      add(scratch_.data() + prefix_at[count], scratch_.size() - prefix_at[count]);
  }
  gathered_buffers(const gathered_buffers&) = delete;
  gathered_buffers& operator=(const gathered_buffers&) = delete;

  [[nodiscard]] bool done() const { return first_ == buffers_.size(); }

  /// One non-blocking `sendmsg` of what is left; moves past what it took. The error of a full
  /// socket is `would_block`.
  boost::system::error_code send_some(int fd);

  /// What is left, as many buffers as Asio hands to one call.
  [[nodiscard]] std::array<boost::asio::const_buffer, asio_max_buffers> next_buffers() const;

  /// What is left, copied into one frame that goes out as it is.
  [[nodiscard]] outbound_frame rest() const;

  void advance(std::size_t n);

private:
  /// Into scratch_: the `]` of the event before (if `event_open`), `frame`'s header and head.
  /// Returns whether `frame` is an event, whose `]` the next prefix (or the end) closes.
  bool add_prefix(const outbound_frame& frame, bool event_open);
  void close_event(bool event_open);
  void append(const char* data, std::size_t size) { scratch_.insert(scratch_.end(), data, data + size); }
  void add(const char* data, std::size_t size) { buffers_.push_back(iovec{const_cast<char*>(data), size}); }

  boost::container::small_vector<char, scratch_inline> scratch_;
  boost::container::small_vector<iovec, 2 * inline_frames + 1> buffers_;
  std::size_t first_ = 0;
};

} // namespace comb::actors
