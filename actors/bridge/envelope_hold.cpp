// SPDX-License-Identifier: MIT
#include "actors/bridge/envelope_hold.hpp"

#include <algorithm>

namespace comb::actors {

namespace {

/// A string's memory: its object, and its buffer when it is too long for the object itself
/// (with the allocator's own header).
std::size_t string_bytes(const std::string& s) {
  constexpr std::size_t in_place = 15;
  constexpr std::size_t allocation_header = 16;
  return sizeof(std::string) + (s.capacity() > in_place ? s.capacity() + 1 + allocation_header : 0);
}

} // namespace

std::size_t held_bytes(const committed_event& event) {
  const auto& json = event.event.json;
  std::size_t bytes = json ? string_bytes(*json) : 0;
  if (const auto& ev = event.event.ev) {
    // A parsed event holds each tag as a vector of strings: a list of 10,000 members is about
    // three times its JSON.
    bytes += sizeof(protocol::event) + string_bytes(ev->content);
    for (const auto& tag : ev->tags) {
      bytes += sizeof(tag) + tag.capacity() * sizeof(std::string);
      for (const auto& value : tag)
        bytes += string_bytes(value) - sizeof(std::string);
    }
  }
  return bytes;
}

bool envelope_hold::hold(committed_event event, std::int64_t version, clock::time_point now,
                         std::int64_t missed_since_ms, std::int64_t asks_before) {
  const std::size_t bytes = held_bytes(event);
  if (count_ + 1 > bounds_.max_envelopes || bytes_ + bytes > bounds_.max_bytes)
    return false;
  auto community = event.community_id;
  communities_[community].push_back({std::move(event), version, bytes, now, missed_since_ms, asks_before});
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
        const auto missed = queue.front().missed_since_ms;
        out.expired_since = out.expired_since ? std::min(*out.expired_since, missed) : missed;
      } else {
        break; // later ones wait behind it: one origin's events keep their order
      }
      take_front(queue);
    }
    it = queue.empty() ? communities_.erase(it) : std::next(it);
  }
  return out;
}

envelope_hold::released envelope_hold::drop_above(std::int64_t community, std::int64_t version,
                                                   std::int64_t ask) {
  released out;
  auto it = communities_.find(community);
  if (it == communities_.end())
    return out;
  std::erase_if(it->second, [&](const waiting& w) {
    if (w.version <= version || w.asks_before >= ask)
      return false;
    ++out.expired;
    out.expired_since = out.expired_since ? std::min(*out.expired_since, w.missed_since_ms) : w.missed_since_ms;
    --count_;
    bytes_ -= w.bytes;
    return true;
  });
  if (it->second.empty())
    communities_.erase(it);
  return out;
}

std::int64_t envelope_hold::highest_claim(std::int64_t community) const {
  auto it = communities_.find(community);
  if (it == communities_.end())
    return 0;
  std::int64_t highest = 0;
  for (const auto& w : it->second)
    highest = std::max(highest, w.version);
  return highest;
}

} // namespace comb::actors
