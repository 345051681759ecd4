// SPDX-License-Identifier: MIT
#include "actors/community/notice_inbox.hpp"

#include <algorithm>
#include <utility>

namespace comb::actors {

bool notice_inbox::add(std::string_view payload) {
  auto notice = storage::parse_access_notice(payload);
  std::lock_guard lock(mutex_);
  ++received_;
  if (notice) {
    auto found = pending_.find(notice->community_id);
    if (found != pending_.end()) {
      found->second.version = std::max(found->second.version, notice->version);
      found->second.wrote_events = found->second.wrote_events && notice->wrote_events;
    } else if (pending_.size() < max_pending) {
      pending_.emplace(notice->community_id, *notice);
    } else {
      overflowed_ = true;
    }
  }
  return !std::exchange(woken_, true);
}

notice_inbox::batch notice_inbox::take() {
  std::lock_guard lock(mutex_);
  batch out;
  out.notices.reserve(pending_.size());
  for (const auto& [id, notice] : pending_)
    out.notices.push_back(notice);
  pending_.clear();
  out.overflowed = std::exchange(overflowed_, false);
  out.received = std::exchange(received_, 0);
  woken_ = false;
  return out;
}

} // namespace comb::actors
