// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "tools/watch/ledger.hpp"

namespace comb::watch {

/// The watcher's notion of time: monotonic, injected everywhere so the core has no clock.
using instant = std::chrono::steady_clock::time_point;

/// One line of output: a single new member, or a summary of several.
struct alert {
  std::vector<pubkey_hex> members;
  bool summary = false;

  friend bool operator==(const alert&, const alert&) = default;
};

struct batching_rules {
  /// A live burst arrives as several growing lists, so delivery waits for this much quiet.
  std::chrono::milliseconds quiet{1500};
  /// ...but never longer than this after the first pending join, so a steady drip still alerts.
  std::chrono::milliseconds cap{5000};
  /// More joins than this in one delivery become one summary.
  std::size_t most_single_alerts = 3;
};

/// Holds joins already recorded in the ledger until a trailing quiet window (capped) has passed,
/// then hands them out as alerts, across lists and not only within one.
class alert_batcher {
public:
  explicit alert_batcher(batching_rules rules = {}) : rules_(rules) {}

  void add(const std::vector<pubkey_hex>& joined, instant now);

  /// When the pending joins become deliverable; nothing when none are pending.
  [[nodiscard]] std::optional<instant> due() const;

  /// The alerts deliverable at `now` (none before `due()`).
  [[nodiscard]] std::vector<alert> take_due(instant now);

  /// Everything pending, at once (shutdown: the ledger already recorded these joins).
  [[nodiscard]] std::vector<alert> take_all();

  /// Drops what is pending without delivering it (revocation).
  void discard() { pending_.clear(); }

private:
  batching_rules rules_;
  std::vector<pubkey_hex> pending_;
  instant first_added_{};
  instant last_added_{};
};

} // namespace comb::watch
