// SPDX-License-Identifier: MIT
#include "storage/bridge_replay.hpp"

#include <algorithm>
#include <limits>

#include "storage/bridge_envelope.hpp"

namespace comb::storage {

replay_guard::replay_guard(std::int64_t started_ms, std::size_t capacity)
    : started_ms_(started_ms), capacity_(std::max<std::size_t>(capacity, 1)),
      floor_(std::numeric_limits<std::int64_t>::min()) {}

replay_verdict replay_guard::admit(std::int64_t community_id, const protocol::bytes32& event_id,
                                   std::int64_t sent_ms, std::int64_t now_ms) {
  if (sent_ms < started_ms_)
    return replay_verdict::before_start;
  if (sent_ms <= floor_)
    return replay_verdict::below_floor;
  forget_expired(now_ms);
  entry key{community_id, event_id, sent_ms};
  if (seen_.contains(key))
    return replay_verdict::seen;
  while (order_.size() >= capacity_)
    forget_oldest(now_ms);
  seen_.insert(key);
  order_.push_back(key);
  return replay_verdict::fresh;
}

/// Envelopes sent before the window are refused as stale anyway: their ids need no keeping.
void replay_guard::forget_expired(std::int64_t now_ms) {
  while (!order_.empty() && order_.front().sent_ms < now_ms - envelope_max_skew_ms) {
    seen_.erase(order_.front());
    order_.pop_front();
  }
}

/// Full: the oldest arrival goes; if a replay of it could still pass the staleness check, the
/// floor rises to its send time so that replay is refused too.
void replay_guard::forget_oldest(std::int64_t now_ms) {
  const entry& oldest = order_.front();
  if (oldest.sent_ms >= now_ms - envelope_max_skew_ms && oldest.sent_ms > floor_) {
    floor_ = oldest.sent_ms;
    ++floor_raises_;
  }
  seen_.erase(oldest);
  order_.pop_front();
}

} // namespace comb::storage
