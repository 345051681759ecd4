// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "actors/community/member_cache.hpp"
#include "actors/gateway/websocket_outbox.hpp"

namespace comb::actors {

/// The pod's open WebSocket sessions, by community: what closes a community's connections when
/// it ends, tells their actors that access changed, and ends them at shutdown. Thread-safe.
class session_table {
public:
  /// Registers a session. Its outbox is closed at once when the pod is stopping (1001) or the
  /// community has ended (1008): its host was looked up before an archive or a deletion, and
  /// the community actor, which marks the cache before it closes the open sessions, may have
  /// closed them already. Under the one lock, either that close sees this session or this
  /// registration sees the mark.
  std::uint64_t enroll(std::shared_ptr<websocket_outbox> outbox, caf::actor actor,
                       std::int64_t community_id, const member_cache& community);

  void withdraw(std::uint64_t id);

  /// Closes every connection of a community (archived or deleted) with 1008.
  void close_community(std::int64_t community_id);

  /// Tells every connection actor of the community that its access changed (access_atom).
  void recheck_community(std::int64_t community_id);

  /// Tells every connection actor still alive to exit (the last step of a shutdown).
  void end_remaining_actors();

  /// Refuses sessions from now on and tells every open one's actor to close once everything it
  /// was asked is answered (drain_atom).
  void drain();

  /// Refuses sessions from now on and returns the open ones' outboxes, to close outside the lock.
  [[nodiscard]] std::vector<std::shared_ptr<websocket_outbox>> stop();

  [[nodiscard]] std::size_t size() const;

private:
  struct entry {
    std::weak_ptr<websocket_outbox> outbox;
    caf::actor actor;
    std::int64_t community_id = 0;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, entry> sessions_;
  std::uint64_t next_id_ = 1;
  bool stopping_ = false;
};

} // namespace comb::actors
