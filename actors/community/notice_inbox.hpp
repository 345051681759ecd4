// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/access_change.hpp"

namespace comb::actors {

/// Access-change notifications on their way from the LISTEN connection to the access watcher,
/// coalesced: per community only the highest version, and `wrote_events` only if every one of
/// them did (one that wrote none changed access, archive or hosts, which the watcher follows).
/// Whoever may connect to the database may NOTIFY; one message per notification queued without
/// bound in the watcher's mailbox, each reloading a community, while real changes and the
/// version check waited behind them. Safe for any number of threads.
class notice_inbox {
public:
  /// Communities with a notification waiting; a notification for one more is dropped and the
  /// watcher checks every community's version instead (overflowed).
  static constexpr std::size_t max_pending = 100000;

  /// Keeps the notification `payload`, if it is one; true when the watcher must be woken
  /// (nothing was waiting).
  bool add(std::string_view payload);

  struct batch {
    std::vector<storage::access_notice> notices;
    bool overflowed = false; ///< some were dropped: check every community
    std::size_t received = 0; ///< notifications since the last batch, ours or not
  };
  /// Everything waiting; the next add wakes the watcher again.
  [[nodiscard]] batch take();

private:
  std::mutex mutex_;
  std::unordered_map<std::int64_t, storage::access_notice> pending_;
  bool overflowed_ = false;
  bool woken_ = false;
  std::size_t received_ = 0;
};

} // namespace comb::actors
