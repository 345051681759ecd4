// SPDX-License-Identifier: MIT
#include "storage/event_body_cache.hpp"

#include <array>
#include <cstring>

namespace comb::storage {

event_body_cache::event_body_cache(std::size_t max_bytes)
  : shard_bytes_(max_bytes / shard_count), shards_(std::make_unique<shard[]>(shard_count)) {}

std::size_t event_body_cache::id_hash::operator()(const id_key& key) const noexcept {
  // An id is a SHA-256: any eight of its bytes are already a good hash.
  std::uint64_t bits = 0;
  std::memcpy(&bits, key.id.data() + 8, sizeof bits);
  return static_cast<std::size_t>(bits ^ static_cast<std::uint64_t>(key.community_id) * 0x9e3779b97f4a7c15ULL);
}

event_body_cache::shard& event_body_cache::shard_of(const id_key& key) noexcept {
  return shards_[key.id[0] % shard_count];
}

bool event_body_cache::append_to(const body_key& key, std::string& out) {
  const id_key id{key.community_id, key.id};
  shard& s = shard_of(id);
  {
    std::lock_guard lock(s.mutex);
    auto found = s.index.find(id);
    if (found != s.index.end() && found->second.version == key.version) {
      found->second.read = true;
      out += *found->second.body;
      hits_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void event_body_cache::share_all(std::span<const body_key> keys, std::span<shared_body> bodies) {
  // The rows of each shard together, in page order within it.
  std::vector<std::uint32_t> by_shard(keys.size());
  std::array<std::uint32_t, shard_count + 1> starts{};
  for (const auto& key : keys)
    ++starts[key.id[0] % shard_count + 1];
  for (std::size_t i = 1; i <= shard_count; ++i)
    starts[i] += starts[i - 1];
  auto next = starts;
  for (std::uint32_t i = 0; i < keys.size(); ++i)
    by_shard[next[keys[i].id[0] % shard_count]++] = i;
  std::uint64_t hits = 0;
  std::vector<std::pair<std::uint32_t, const shared_body*>> matches;
  matches.reserve(keys.size());
  for (std::size_t n = 0; n < shard_count; ++n) {
    if (starts[n] == starts[n + 1])
      continue;
    shard& s = shards_[n];
    std::lock_guard lock(s.mutex);
    // Each key's bucket and first node fetched with little else in flight between them, so the
    // processor overlaps their cache misses; the finds below then mostly hit.
    for (std::uint32_t at = starts[n]; at < starts[n + 1]; ++at) {
      const body_key& key = keys[by_shard[at]];
      const std::size_t bucket = s.index.bucket(id_key{key.community_id, key.id});
      if (auto first = s.index.begin(bucket); first != s.index.end(bucket))
        __builtin_prefetch(&*first);
    }
    // Then each body's count of owners is fetched the same way before any is raised: raising
    // them one by one, each a miss, was two thirds of this function's time. make_shared puts
    // the count just before the string (libstdc++); a wrong guess costs only a useless prefetch.
    matches.clear();
    for (std::uint32_t at = starts[n]; at < starts[n + 1]; ++at) {
      const body_key& key = keys[by_shard[at]];
      auto match = s.index.find(id_key{key.community_id, key.id});
      if (match == s.index.end() || match->second.version != key.version)
        continue;
      match->second.read = true;
      __builtin_prefetch(reinterpret_cast<const char*>(match->second.body.get()) - 8, 1);
      matches.emplace_back(by_shard[at], &match->second.body);
    }
    for (const auto& [place, body] : matches)
      bodies[place] = *body;
    hits += matches.size();
  }
  hits_.fetch_add(hits, std::memory_order_relaxed);
  misses_.fetch_add(keys.size() - hits, std::memory_order_relaxed);
}

std::optional<std::string> event_body_cache::find(const body_key& key) {
  std::string body;
  if (!append_to(key, body))
    return std::nullopt;
  return body;
}

void event_body_cache::remember(const body_key& key, std::string_view body) {
  if (body.size() + entry_overhead > shard_bytes_)
    return;
  remember(key, std::make_shared<const std::string>(body));
}

void event_body_cache::remember(const body_key& key, shared_body body) {
  if (!body)
    return;
  const std::size_t cost = body->size() + entry_overhead;
  if (cost > shard_bytes_)
    return;
  const id_key id{key.community_id, key.id};
  shard& s = shard_of(id);
  std::lock_guard lock(s.mutex);
  auto [found, fresh] = s.index.try_emplace(id);
  entry& held = found->second;
  if (fresh) {
    s.order.push_back(id);
    entries_.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Another version of the same event: the newer read or write replaces it in place.
    const std::size_t old_cost = held.body->size() + entry_overhead;
    s.bytes -= old_cost;
    bytes_.fetch_sub(old_cost, std::memory_order_relaxed);
  }
  held.version = key.version;
  held.body = std::move(body);
  s.bytes += cost;
  bytes_.fetch_add(cost, std::memory_order_relaxed);
  while (s.bytes > shard_bytes_)
    drop_one(s);
}

void event_body_cache::drop_one(shard& s) {
  // Second chance: an entry read since the hand last passed it goes to the back once more.
  // Every entry is passed at most twice before one goes, since passing clears its flag.
  for (;;) {
    id_key oldest = s.order.front();
    s.order.pop_front();
    auto found = s.index.find(oldest);
    if (found->second.read) {
      found->second.read = false;
      s.order.push_back(oldest);
      continue;
    }
    const std::size_t cost = found->second.body->size() + entry_overhead;
    s.index.erase(found);
    s.bytes -= cost;
    bytes_.fetch_sub(cost, std::memory_order_relaxed);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    evictions_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
}

body_cache_counts event_body_cache::counts() const noexcept {
  return body_cache_counts{hits_.load(std::memory_order_relaxed),
                           misses_.load(std::memory_order_relaxed),
                           evictions_.load(std::memory_order_relaxed),
                           bytes_.load(std::memory_order_relaxed),
                           entries_.load(std::memory_order_relaxed)};
}

} // namespace comb::storage
