// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "actors/messages.hpp"

namespace comb::actors {

/// What one pod may hold of bridged events while it catches up with the database: a pod that
/// Postgres cannot reach (Redis still working) would otherwise hold everything other pods send.
struct hold_bounds {
  std::size_t max_envelopes = 10'000;
  std::size_t max_bytes = 64 * 1024 * 1024;
  /// Longer than a LISTEN notification or the access watcher's one-second version check takes;
  /// past it the pod is cut off from Postgres and the event is dropped (clients read it from
  /// history later), never delivered on an access it cannot confirm.
  std::chrono::milliseconds max_wait{5000};
};

/// Bridged events that name a newer state version of their community than this pod holds: the
/// origin may have removed a reader this pod still lets in. Each waits until the pod's member
/// cache reaches that version (then the connections' checks see the removal) or is dropped when
/// it waited too long or does not fit. Per community, events leave in arrival order. Plain
/// class: the bridge actor drives it (actors/bridge/bridge_actor.cpp).
class envelope_hold {
public:
  using clock = std::chrono::steady_clock;

  explicit envelope_hold(hold_bounds bounds = {}) : bounds_(bounds) {}

  /// Holds `event` until its community reaches `version`; false (nothing held) when it does
  /// not fit the bounds. `missed_since_ms`: where a fill must reach back to should it be
  /// dropped (when its envelope came, or where the gap of the fill that brought it began).
  /// `asks_before`: how many asks of the database the holder had sent when the event came.
  bool hold(committed_event event, std::int64_t version, clock::time_point now,
            std::int64_t missed_since_ms, std::int64_t asks_before);

  struct released {
    std::vector<committed_event> ready; ///< their community reached their version, in order
    std::size_t expired = 0;            ///< dropped: waited longer than max_wait
    std::optional<std::int64_t> expired_since; ///< the earliest `missed_since_ms` of those
  };

  /// Takes out what `version_of(community)` now covers and drops what waited too long.
  released release(clock::time_point now, const std::function<std::int64_t(std::int64_t)>& version_of);

  /// Drops the events of `community` that wait for a version above `version`, which the
  /// database held when read for ask number `ask` (counted in `expired`). Only events held
  /// before that ask was sent: a true claim that came later may be of a commit after the read.
  released drop_above(std::int64_t community, std::int64_t version, std::int64_t ask);

  /// The highest version events of `community` wait for (0: none wait).
  [[nodiscard]] std::int64_t highest_claim(std::int64_t community) const;

  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  /// Whether events of `community` wait: a later one waits behind them, whatever its version.
  [[nodiscard]] bool holds(std::int64_t community) const { return communities_.contains(community); }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

private:
  struct waiting {
    committed_event event;
    std::int64_t version = 0;
    std::size_t bytes = 0;
    clock::time_point since;
    std::int64_t missed_since_ms = 0;
    std::int64_t asks_before = 0;
  };

  void take_front(std::deque<waiting>& queue);

  hold_bounds bounds_;
  std::map<std::int64_t, std::deque<waiting>> communities_;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

/// What an event costs while it is held: its JSON, and the parsed event's strings and tags.
[[nodiscard]] std::size_t held_bytes(const committed_event& event);

} // namespace comb::actors
