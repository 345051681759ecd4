// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace comb::actors {

/// Why the relay ends a connection; maps to a WebSocket close code.
enum class close_reason : std::uint16_t {
  going_away = 1001,     ///< shutdown
  policy = 1008,         ///< e.g. the community was archived
  too_big = 1009,        ///< a frame over the size limit
  slow_reader = 4000,    ///< pending outbound bytes passed the bound
};

/// Where a connection actor's outbound frames go: the socket's bounded queue in production, a
/// recorder in tests. Thread-safe; never blocks.
class frame_sink {
public:
  virtual ~frame_sink() = default;

  /// Queues a text frame. A frame that would take the pending bytes past the bound ends the
  /// connection instead (the reader is too slow).
  virtual void send(std::string frame) = 0;

  /// Ends the connection after what is already queued.
  virtual void close(close_reason why) = 0;

  /// Bytes queued and not yet written to the socket (0 where nothing is queued).
  [[nodiscard]] virtual std::size_t queued_bytes() const { return 0; }

  /// True once the connection is ending: what is sent now may never be written.
  [[nodiscard]] virtual bool ending() const { return false; }
};

} // namespace comb::actors
