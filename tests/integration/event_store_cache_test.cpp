// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "protocol/signature.hpp"
#include "storage/event_body_cache.hpp"
#include "storage/management_store.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

// The event body cache: the database still chooses every reply's rows, so a cached read answers
// exactly what an uncached read of the same store answers, whatever was deleted or stored again.

using namespace comb;
using comb::test::author;
using comb::test::event_ptr;
using comb::test::jsons_of;
using comb::test::scalar;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;
constexpr std::uint32_t default_limit = 100;

struct cache_fixture : test::store_fixture {
  storage::event_body_cache bodies{1 << 20};
  storage::event_store cached{connection, &bodies};
  author alice{41};

  /// Stores through the cached store (a writer that fills the cache) or the plain one.
  void store(const std::vector<event_ptr>& batch, bool through_cache, std::int64_t into = 0) {
    std::vector<storage::event_write> writes;
    for (const auto& ev : batch)
      writes.push_back(test::write_of(into ? into : community, ev));
    auto& store = through_cache ? cached : events;
    for (const auto& outcome : store.store_batch(writes)) {
      INFO(outcome.message);
      REQUIRE(outcome.result == status::stored);
    }
  }

  std::vector<std::string> read(storage::event_store& store, const std::vector<protocol::filter>& filters,
                                std::int64_t in = 0, std::int64_t at = now) {
    auto result = store.query(in ? in : community, filters, at, default_limit);
    INFO(result.error);
    REQUIRE(result.ok);
    return result.events;
  }

  /// A cached read, checked against an uncached read of the same store.
  std::vector<std::string> read_both(const std::vector<protocol::filter>& filters,
                                     std::int64_t in = 0, std::int64_t at = now) {
    auto through_cache = read(cached, filters, in, at);
    CHECK(through_cache == read(events, filters, in, at));
    return through_cache;
  }
};

protocol::filter limited(std::uint32_t limit) {
  protocol::filter f;
  f.limit = limit;
  return f;
}

std::vector<event_ptr> notes(const author& who, int count, std::int64_t newest) {
  std::vector<event_ptr> out;
  for (int i = 0; i < count; ++i)
    out.push_back(who.sign(1, newest - i, {{"e", std::string(64, 'a')}}, "note " + std::to_string(i)));
  return out;
}

} // namespace

TEST_CASE_METHOD(cache_fixture, "events a cached writer stored are served from the cache",
                 "[integration][event_store][cache]") {
  auto batch = notes(alice, 5, now - 1);
  store(batch, true);
  CHECK(bodies.counts().entries == 5);
  CHECK(read_both({protocol::filter{}}) == jsons_of(batch));
  CHECK(bodies.counts().hits == 5);
  CHECK(bodies.counts().misses == 0);
}

TEST_CASE_METHOD(cache_fixture, "a body fetched on a miss is the stored one, and is then held",
                 "[integration][event_store][cache]") {
  auto batch = notes(alice, 4, now - 1);
  store(batch, false);
  CHECK(bodies.counts().entries == 0);
  CHECK(read_both({protocol::filter{}}) == jsons_of(batch));
  CHECK(bodies.counts().misses == 4);
  CHECK(bodies.counts().entries == 4);
  CHECK(read_both({protocol::filter{}}) == jsons_of(batch));
  CHECK(bodies.counts().hits == 4);
}

TEST_CASE_METHOD(cache_fixture, "a page of hits and misses keeps the order and the limits",
                 "[integration][event_store][cache]") {
  auto batch = notes(alice, 12, now - 1);
  store(batch, false);
  protocol::filter some;
  some.ids = std::vector{batch[1]->id, batch[4]->id, batch[9]->id};
  std::sort(some.ids->begin(), some.ids->end());
  CHECK(read_both({some}).size() == 3); // three held, the rest not
  auto page = read_both({limited(8)});
  CHECK(page == jsons_of(std::vector(batch.begin(), batch.begin() + 8)));
  CHECK(bodies.counts().hits == 2);
  protocol::filter tagged;
  tagged.tags.push_back({'e', {std::string(64, 'a')}});
  tagged.limit = 5;
  protocol::filter first_id;
  first_id.ids = std::vector{batch[11]->id};
  auto two_filters = read_both({tagged, first_id});
  CHECK(two_filters.size() == 6);
  // Read one index range per (author, kind) pair (the LATERAL form), some kind 7 among them.
  auto reactions = std::vector{alice.sign(7, now, {}, "+"), alice.sign(7, now - 30, {}, "-")};
  store(reactions, false);
  protocol::filter by_pairs;
  by_pairs.authors = std::vector{alice.pubkey()};
  by_pairs.kinds = std::vector<std::uint32_t>{1, 7};
  by_pairs.limit = 9;
  auto paired = read_both({by_pairs});
  CHECK(paired.size() == 9);
  CHECK(paired[0] == test::json_of(reactions[0]));
}

TEST_CASE_METHOD(cache_fixture, "the byte bound of each chunk holds as without the cache",
                 "[integration][event_store][cache]") {
  auto batch = notes(alice, 20, now - 1);
  store(batch, true);
  const std::size_t one = test::json_of(batch[0]).size();
  auto chunks_of = [&](storage::event_store& store) {
    std::vector<std::vector<std::string>> chunks;
    auto keep = [&](storage::query_result chunk) {
      chunks.push_back(std::move(chunk.events));
      return true;
    };
    auto rest = store.query_chunks(community, {protocol::filter{}}, now, 100, 3 * one + one / 2, keep);
    REQUIRE(rest.ok);
    chunks.push_back(std::move(rest.events));
    return chunks;
  };
  auto through_cache = chunks_of(cached);
  CHECK(through_cache == chunks_of(events));
  CHECK(through_cache.size() > 3);
  for (const auto& chunk : through_cache)
    CHECK(chunk.size() <= 4);
}

TEST_CASE_METHOD(cache_fixture, "a cached event deleted by NIP-09 is never served",
                 "[integration][event_store][cache]") {
  auto batch = notes(alice, 3, now - 10);
  store(batch, true);
  REQUIRE(read_both({protocol::filter{}}).size() == 3);
  auto deletion = alice.sign(5, now - 1, {{"e", test::hex(batch[1]->id)}});
  store({deletion}, true);
  CHECK(read_both({protocol::filter{}}) == jsons_of({deletion, batch[0], batch[2]}));
}

TEST_CASE_METHOD(cache_fixture, "a cached event banned by NIP-86 is never served",
                 "[integration][event_store][cache]") {
  auto batch = notes(alice, 3, now - 10);
  store(batch, true);
  REQUIRE(read_both({protocol::filter{}}).size() == 3);
  storage::management_store management(connection, protocol::key_pair::generate());
  REQUIRE(management.ban_event(community, batch[0]->id, "spam", author(43).pubkey())
          == storage::management_result::changed);
  CHECK(read_both({protocol::filter{}}) == jsons_of({batch[1], batch[2]}));
}

TEST_CASE_METHOD(cache_fixture, "a cached event that expired is never served",
                 "[integration][event_store][cache]") {
  auto lasting = alice.sign(1, now - 20);
  auto expiring = alice.sign(1, now - 10, {{"expiration", std::to_string(now + 5)}});
  store({lasting, expiring}, true);
  REQUIRE(read_both({protocol::filter{}}) == jsons_of({expiring, lasting}));
  CHECK(read_both({protocol::filter{}}, 0, now + 5) == jsons_of({lasting}));
  CHECK(cached.purge_expired(now + 5) == 1);
  CHECK(read_both({protocol::filter{}}, 0, now) == jsons_of({lasting}));
}

TEST_CASE_METHOD(cache_fixture, "a deleted community's cached events are never served",
                 "[integration][event_store][cache]") {
  store(notes(alice, 3, now - 1), true);
  REQUIRE(read_both({protocol::filter{}}).size() == 3);
  scalar(connection, "DELETE FROM communities WHERE id = $1::bigint RETURNING 1",
         {std::to_string(community)});
  CHECK(read_both({protocol::filter{}}).empty());
}

TEST_CASE_METHOD(cache_fixture, "the same id in two communities is cached apart",
                 "[integration][event_store][cache]") {
  auto ev = alice.sign(1, now - 1, {}, "shared");
  const std::int64_t other = add_community("b.example");
  // One batch: both rows have the same version (the batch's transaction).
  for (const auto& outcome : cached.store_batch(std::vector{test::write_of(community, ev),
                                                            test::write_of(other, ev)}))
    REQUIRE(outcome.result == status::stored);
  CHECK(bodies.counts().entries == 2);
  // The other community's row carries another signature (as another client's copy could).
  std::string raw = test::json_of(ev);
  std::string sig = test::hex(ev->id) + test::hex(ev->id);
  auto at = raw.find("\"sig\":\"");
  REQUIRE(at != std::string::npos);
  raw.replace(at + 7, 128, sig);
  scalar(connection, "UPDATE events SET raw = $1 WHERE community_id = $2::bigint RETURNING 1",
         {raw, std::to_string(other)});
  CHECK(read_both({protocol::filter{}}) == jsons_of({ev}));
  CHECK(read_both({protocol::filter{}}, other) == std::vector{raw});
  CHECK(read_both({protocol::filter{}}) == jsons_of({ev}));
}

TEST_CASE_METHOD(cache_fixture, "an event stored again with another body is served as stored now",
                 "[integration][event_store][cache]") {
  auto ev = alice.sign(1, now - 1, {}, "again");
  store({ev}, true);
  REQUIRE(read_both({protocol::filter{}}) == jsons_of({ev}));
  // Deleted and stored again by another pod (or a ban lifted), with another signature: the
  // row's version changed, so the body held for the old row is not served.
  std::string raw = test::json_of(ev);
  auto at = raw.find("\"sig\":\"");
  REQUIRE(at != std::string::npos);
  raw.replace(at + 7, 128, std::string(128, 'b'));
  scalar(connection, "DELETE FROM events WHERE community_id = $1::bigint RETURNING 1",
         {std::to_string(community)});
  scalar(connection,
         "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
         " VALUES ($1::bigint, decode($2, 'hex'), decode($3, 'hex'), $4::bigint, 1, $5) RETURNING 1",
         {std::to_string(community), test::hex(ev->id), alice.pubkey_hex(),
          std::to_string(ev->created_at), raw});
  CHECK(read_both({protocol::filter{}}) == std::vector{raw});
  CHECK(read_both({protocol::filter{}}) == std::vector{raw});
}

TEST_CASE_METHOD(cache_fixture, "a read by one tag value answers from tag rows as the event rows do",
                 "[integration][event_store][cache]") {
  // A cached store reads a filter of one tag value from the copies its tag rows carry of their
  // event (migration 49), the plain one from the event rows: both answer alike whatever the
  // filter, the bans, the clock or the rooms hidden.
  const std::string root(64, 'c');
  author bob(42);
  auto kept = alice.sign(1, now - 10, {{"e", root}, {"t", "x"}}, "kept");
  auto expiring = alice.sign(1, now - 9, {{"e", root}, {"expiration", std::to_string(now + 5)}}, "soon gone");
  auto reaction = alice.sign(7, now - 8, {{"e", root}}, "+");
  auto by_bob = bob.sign(1, now - 7, {{"e", root}}, "banned soon");
  auto in_office = alice.sign(1, now - 6, {{"e", root}, {"h", "office"}}, "private");
  store({kept, expiring, reaction}, true);
  store({by_bob, in_office}, false);
  protocol::filter replies;
  replies.tags.push_back({'e', {root}});
  CHECK(read_both({replies}) == jsons_of({in_office, by_bob, reaction, expiring, kept}));
  auto reactions = replies;
  reactions.kinds = std::vector<std::uint32_t>{7};
  CHECK(read_both({reactions}) == jsons_of({reaction}));
  auto tagged_x = replies;
  tagged_x.tags.push_back({'t', {"x"}});
  CHECK(read_both({tagged_x}) == jsons_of({kept}));
  auto newest_two = replies;
  newest_two.limit = 2;
  CHECK(read_both({newest_two}) == jsons_of({in_office, by_bob}));
  CHECK(read_both({replies}, 0, now + 5) == jsons_of({in_office, by_bob, reaction, kept}));
  scalar(connection, "INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, decode($2, 'hex'))"
                     " RETURNING 1", {std::to_string(community), bob.pubkey_hex()});
  CHECK(read_both({replies}) == jsons_of({in_office, reaction, expiring, kept}));
  // A count by one tag value counts the same tag rows' copies.
  CHECK(events.count(community, {replies}, now).count == 4);
  CHECK(events.count(community, {replies}, now + 5).count == 3);
  CHECK(events.count(community, {reactions}, now).count == 1);
  CHECK(events.count(community, {tagged_x}, now).count == 1);
  CHECK(events.count(community, {replies, reactions}, now).count == 4);
  protocol::room_hiding hiding;
  hiding.unseen = {"office"};
  auto hidden_read = [&](storage::event_store& store) {
    std::vector<std::string> out;
    auto rest = store.query_chunks(community, {replies}, now, default_limit, 1 << 16,
                                   [&](storage::query_result chunk) {
                                     out.insert(out.end(), chunk.events.begin(), chunk.events.end());
                                     return true;
                                   }, false, hiding);
    REQUIRE(rest.ok);
    out.insert(out.end(), rest.events.begin(), rest.events.end());
    return out;
  };
  CHECK(hidden_read(cached) == jsons_of({reaction, expiring, kept}));
  CHECK(hidden_read(events) == jsons_of({reaction, expiring, kept}));
  CHECK(events.count(community, {replies}, now, hiding).count == 3);
  // Read in pages of about two events, each going on after the last: the same chunks.
  auto chunks_of = [&](storage::event_store& store) {
    std::vector<std::vector<std::string>> chunks;
    auto rest = store.query_chunks(community, {replies}, now, default_limit, 2 * test::json_of(kept).size(),
                                   [&](storage::query_result chunk) {
                                     chunks.push_back(std::move(chunk.events));
                                     return true;
                                   });
    REQUIRE(rest.ok);
    chunks.push_back(std::move(rest.events));
    return chunks;
  };
  auto paged = chunks_of(cached);
  CHECK(paged == chunks_of(events));
  CHECK(paged.size() >= 2);
}
