// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "storage/event_body_cache.hpp"

using comb::storage::body_key;
using comb::storage::event_body_cache;
using comb::storage::shared_body;

namespace {

comb::protocol::bytes32 id_of(std::uint32_t n, std::uint8_t shard = 0) {
  comb::protocol::bytes32 id{};
  id[0] = shard; // the cache picks a shard by the first byte
  for (int i = 0; i < 4; ++i)
    id[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(n >> (8 * i));
  return id;
}

std::string body(std::size_t size, char fill = 'x') {
  return std::string(size, fill);
}

} // namespace

TEST_CASE("a body is found only under its community, id and row version") {
  event_body_cache cache(1 << 20);
  cache.remember(body_key{1, id_of(7), 100}, body(10, 'a'));
  auto hit = cache.find(body_key{1, id_of(7), 100});
  REQUIRE(hit);
  CHECK(*hit == std::string(10, 'a'));
  CHECK_FALSE(cache.find(body_key{2, id_of(7), 100}));  // another community
  CHECK_FALSE(cache.find(body_key{1, id_of(8), 100}));  // another id
  CHECK_FALSE(cache.find(body_key{1, id_of(7), 101}));  // the row stored again since
  auto counts = cache.counts();
  CHECK(counts.hits == 1);
  CHECK(counts.misses == 3);
  CHECK(counts.entries == 1);
  CHECK(counts.bytes == 10 + event_body_cache::entry_overhead);
}

TEST_CASE("a newer version of the same event replaces the one held") {
  event_body_cache cache(1 << 20);
  cache.remember(body_key{1, id_of(7), 100}, body(10, 'a'));
  cache.remember(body_key{1, id_of(7), 200}, body(20, 'b'));
  CHECK_FALSE(cache.find(body_key{1, id_of(7), 100}));
  auto hit = cache.find(body_key{1, id_of(7), 200});
  REQUIRE(hit);
  CHECK(*hit == std::string(20, 'b'));
  CHECK(cache.counts().entries == 1);
  CHECK(cache.counts().bytes == 20 + event_body_cache::entry_overhead);
}

TEST_CASE("the cache stays within its bytes, dropping the oldest entry not read since first") {
  // 16 shards of 1,000 bytes: one shard holds three bodies of 100 (292 bytes each with overhead).
  event_body_cache cache(16 * 1000);
  for (std::uint32_t n = 0; n < 3; ++n)
    cache.remember(body_key{1, id_of(n), 1}, body(100));
  CHECK(cache.counts().entries == 3);
  REQUIRE(cache.find(body_key{1, id_of(0), 1})); // 0 was read: it gets a second chance
  cache.remember(body_key{1, id_of(3), 1}, body(100));
  CHECK(cache.counts().evictions == 1);
  CHECK(cache.counts().entries == 3);
  CHECK_FALSE(cache.find(body_key{1, id_of(1), 1})); // the oldest unread one went
  CHECK(cache.counts().bytes <= 1000);
  REQUIRE(cache.find(body_key{1, id_of(3), 1}));
  // Order now 2, 3, 0 (its chance used up when 1 went); 3 was read, 2 was not.
  cache.remember(body_key{1, id_of(4), 1}, body(100));
  CHECK(cache.counts().evictions == 2);
  CHECK_FALSE(cache.find(body_key{1, id_of(2), 1}));
  CHECK(cache.find(body_key{1, id_of(0), 1}));
  CHECK(cache.find(body_key{1, id_of(3), 1}));
  CHECK(cache.find(body_key{1, id_of(4), 1}));
  // Other shards are not touched by this one's bound.
  cache.remember(body_key{1, id_of(9, 5), 1}, body(100));
  CHECK(cache.counts().entries == 4);
  std::string frame = "[\"EVENT\",\"s\",";
  CHECK(cache.append_to(body_key{1, id_of(9, 5), 1}, frame));
  CHECK(frame == "[\"EVENT\",\"s\"," + body(100));
  CHECK_FALSE(cache.append_to(body_key{1, id_of(9, 5), 2}, frame));
  CHECK(frame.size() == std::string("[\"EVENT\",\"s\",").size() + 100);
}

TEST_CASE("a body larger than a shard's share is not held, and nothing is held without a bound") {
  event_body_cache cache(16 * 1000);
  cache.remember(body_key{1, id_of(1), 1}, body(1000));
  CHECK_FALSE(cache.find(body_key{1, id_of(1), 1}));
  CHECK(cache.counts().entries == 0);
  CHECK(cache.counts().bytes == 0);
  event_body_cache none(0);
  none.remember(body_key{1, id_of(1), 1}, body(1));
  CHECK_FALSE(none.find(body_key{1, id_of(1), 1}));
}

TEST_CASE("readers and writers on several threads keep the counts and the bound") {
  constexpr std::size_t bound = 16 * 4096;
  event_body_cache cache(bound);
  std::atomic<bool> wrong{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::uint32_t n = 0; n < 20000; ++n) {
        auto id = id_of(n % 500, static_cast<std::uint8_t>(n % 16));
        char fill = static_cast<char>('a' + (n % 500) % 26);
        if ((n + static_cast<std::uint32_t>(t)) % 3 == 0) {
          cache.remember(body_key{1, id, 1}, body(100 + n % 500, fill));
        } else if (auto hit = cache.find(body_key{1, id, 1})) {
          if (hit->size() != 100 + n % 500 || hit->front() != fill)
            wrong = true;
        }
      }
    });
  for (auto& thread : threads)
    thread.join();
  CHECK_FALSE(wrong);
  auto counts = cache.counts();
  CHECK(counts.bytes <= bound);
  CHECK(counts.hits + counts.misses > 0);
  CHECK(counts.evictions > 0);
}

TEST_CASE("a page's look-ups share each held body at its own place, in the page's order") {
  event_body_cache cache(1 << 20);
  std::vector<body_key> keys;
  for (std::uint32_t n = 0; n < 40; ++n) {
    body_key key{1, id_of(n, static_cast<std::uint8_t>(n * 7 % 16)), 5};
    if (n % 3 != 0)
      cache.remember(key, "body " + std::to_string(n));
    keys.push_back(key);
  }
  keys[4].version = 6; // held, but another version
  std::vector<shared_body> bodies(keys.size());
  cache.share_all(keys, bodies);
  for (std::uint32_t n = 0; n < 40; ++n) {
    INFO(n);
    const bool held = n % 3 != 0 && n != 4;
    REQUIRE(static_cast<bool>(bodies[n]) == held);
    if (held)
      CHECK(*bodies[n] == "body " + std::to_string(n));
  }
  CHECK(cache.counts().hits == 26 - 1);
  CHECK(cache.counts().misses == 14 + 1);
  // Shared, not copied: a second look-up hands out the same string.
  std::vector<shared_body> again(keys.size());
  cache.share_all(keys, again);
  CHECK(again[1].get() == bodies[1].get());
}

TEST_CASE("a body remembered as shared is held as it is, and outlives its eviction where shared") {
  event_body_cache cache(16 * (event_body_cache::entry_overhead + 64));
  auto json = std::make_shared<const std::string>(std::string(64, 'j'));
  cache.remember(body_key{1, id_of(1), 7}, json);
  std::vector<shared_body> found(1);
  cache.share_all(std::vector<body_key>{body_key{1, id_of(1), 7}}, found);
  REQUIRE(found[0]);
  CHECK(found[0].get() == json.get());
  for (std::uint32_t n = 2; n < 200; ++n) // every shard passes its bound: the first goes
    cache.remember(body_key{1, id_of(n), 7}, std::string(64, 'x'));
  CHECK_FALSE(cache.find(body_key{1, id_of(1), 7}));
  CHECK(*found[0] == std::string(64, 'j'));
}
