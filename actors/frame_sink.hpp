// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace comb::actors {

/// Why the relay ends a connection; maps to a WebSocket close code.
enum class close_reason : std::uint16_t {
  going_away = 1001,     ///< shutdown
  policy = 1008,         ///< e.g. the community was archived
  too_big = 1009,        ///< a frame over the size limit
  internal_error = 1011, ///< the connection's actor failed
  slow_reader = 4000,    ///< pending outbound bytes passed the bound
  stalled_reader = 4001, ///< its socket took no byte for the idle timeout while frames waited
};

/// A reader cut for its unread output: its socket is dropped without a close frame, which could
/// not get through.
[[nodiscard]] inline bool is_cut(std::optional<close_reason> why) {
  return why == close_reason::slow_reader || why == close_reason::stalled_reader;
}

/// A live EVENT frame whose event JSON is shared by every subscriber it goes to: the frame is
/// `*head` (`["EVENT","<sub>",`, shared by every frame of its subscription), then `*json`, then
/// `]`. Copying the JSON into a frame per subscription was a sixth of a delivery's instructions
/// (and a head copied per frame an allocation, past 15 bytes); the outbox and the gathered write
/// keep the three parts apart.
struct shared_event_frame {
  std::shared_ptr<const std::string> head;
  std::shared_ptr<const std::string> json;
  /// A relay-signed list or room state (13534, 33534, 39000-39005): its NIP-01 address. A newer
  /// one for the same subscription replaces this frame while it still waits in a socket's queue
  /// (DESIGN, cross-pod delivery: membership churn rewrites a list of 750 KB each second).
  std::shared_ptr<const std::string> replaceable_address = nullptr;
  std::int64_t created_at = 0;

  static constexpr std::string_view tail = "]";

  /// The frame's length on the wire (before the WebSocket header).
  [[nodiscard]] std::size_t size() const noexcept { return head->size() + json->size() + tail.size(); }

  /// The whole frame as one string, for sinks that do not keep the parts apart.
  [[nodiscard]] std::string flattened() const {
    std::string out;
    out.reserve(size());
    out.append(*head).append(*json).append(tail);
    return out;
  }
};

/// Where a connection actor's outbound frames go: the socket's bounded queue in production, a
/// recorder in tests. Thread-safe; never blocks.
class frame_sink {
public:
  virtual ~frame_sink() = default;

  /// Queues a text frame. A frame that would take the pending bytes past the bound ends the
  /// connection instead (the reader is too slow).
  virtual void send(std::string frame) = 0;

  /// Queues a live event frame; same bound as `send`. By default it is flattened into one string.
  virtual void send_event(shared_event_frame frame) { send(frame.flattened()); }

  /// Queues live event frames in order, as send_event would one by one (the outbox takes them
  /// under one lock and wakes its writer once). The frames are moved from: the caller's storage
  /// (on its stack for a small turn) is not handed over, so a delivery allocates no vector.
  virtual void send_events(std::span<shared_event_frame> frames) {
    for (auto& frame : frames)
      send_event(std::move(frame));
  }

  /// Queues text frames in order, as send would one by one (the outbox takes them under one
  /// lock and wakes its writer once, so a history reply leaves in as few writes as it can).
  virtual void send_frames(std::vector<std::string> frames) {
    for (auto& frame : frames)
      send(std::move(frame));
  }

  /// Queues a history reply's part: `events` (stored events, their JSON shared), then
  /// `closing` (EOSE and what followed it), in order, as send_events and send_frames would;
  /// the outbox takes both under one lock and wakes its writer once.
  virtual void send_reply(std::span<shared_event_frame> events, std::vector<std::string> closing) {
    send_events(events);
    send_frames(std::move(closing));
  }
  /// Ends the connection after what is already queued (`policy`: its events excepted, as
  /// drop_events).
  virtual void close(close_reason why) = 0;

  /// Drops the event frames queued and not yet being written (control frames stay): the reader
  /// lost the right to read them, and a client that reads slowly must not go on receiving them.
  virtual void drop_events() {}

  /// Bytes queued and not yet written to the socket (0 where nothing is queued).
  [[nodiscard]] virtual std::size_t queued_bytes() const { return 0; }

  /// True once the connection is ending: what is sent now may never be written.
  [[nodiscard]] virtual bool ending() const { return false; }
};

} // namespace comb::actors
