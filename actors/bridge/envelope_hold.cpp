// SPDX-License-Identifier: MIT
#include "actors/bridge/envelope_hold.hpp"

namespace comb::actors {

std::size_t held_bytes(const committed_event& event) {
  constexpr std::size_t overhead = 256; // the parsed event's strings and vectors besides the JSON
  const auto& json = event.event.json;
  return overhead + (json ? 2 * json->size() : 0);
}

bool envelope_hold::hold(committed_event event, std::int64_t version, clock::time_point now) {
  const std::size_t bytes = held_bytes(event);
  if (count_ + 1 > bounds_.max_envelopes || bytes_ + bytes > bounds_.max_bytes)
    return false;
  auto community = event.community_id;
  communities_[community].push_back({std::move(event), version, bytes, now});
  ++count_;
  bytes_ += bytes;
  return true;
}

void envelope_hold::take_front(std::deque<waiting>& queue) {
  --count_;
  bytes_ -= queue.front().bytes;
  queue.pop_front();
}

envelope_hold::released
envelope_hold::release(clock::time_point now,
                       const std::function<std::int64_t(std::int64_t)>& version_of) {
  released out;
  for (auto it = communities_.begin(); it != communities_.end();) {
    auto& queue = it->second;
    const std::int64_t held = version_of(it->first);
    while (!queue.empty()) {
      if (queue.front().version <= held) {
        out.ready.push_back(std::move(queue.front().event));
      } else if (now - queue.front().since >= bounds_.max_wait) {
        ++out.expired;
      } else {
        break; // later ones wait behind it: one origin's events keep their order
      }
      take_front(queue);
    }
    it = queue.empty() ? communities_.erase(it) : std::next(it);
  }
  return out;
}

} // namespace comb::actors
