// SPDX-License-Identifier: MIT
#include "tools/watch/alert_batcher.hpp"

#include <algorithm>

namespace comb::watch {

void alert_batcher::add(const std::vector<pubkey_hex>& joined, instant now) {
  if (joined.empty())
    return;
  if (pending_.empty())
    first_added_ = now;
  last_added_ = now;
  pending_.insert(pending_.end(), joined.begin(), joined.end());
}

std::optional<instant> alert_batcher::due() const {
  if (pending_.empty())
    return std::nullopt;
  return std::min(last_added_ + rules_.quiet, first_added_ + rules_.cap);
}

std::vector<alert> alert_batcher::take_due(instant now) {
  auto when = due();
  if (!when || now < *when)
    return {};
  return take_all();
}

std::vector<alert> alert_batcher::take_all() {
  std::vector<alert> alerts;
  if (pending_.size() > rules_.most_single_alerts) {
    alerts.push_back({std::move(pending_), true});
  } else {
    for (auto& key : pending_)
      alerts.push_back({{std::move(key)}, false});
  }
  pending_.clear();
  return alerts;
}

} // namespace comb::watch
