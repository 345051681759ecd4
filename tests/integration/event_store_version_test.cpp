// SPDX-License-Identifier: MIT
// What the store tells of the community's state as each event committed: the version receivers
// must hold before they deliver it (committed_event::stored_version).
#include <catch2/catch.hpp>
#include <algorithm>

#include "storage/event_body_cache.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::store_one;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

bool on_nothing(const storage::query_result&) { return true; }

} // namespace

TEST_CASE_METHOD(test::store_fixture, "a stored event carries its community's state version as it stood once the event committed",
                 "[integration][event_store][access]") {
  author alice{8};
  const std::int64_t other = add_community("other.example");
  const std::string mine = std::to_string(community);
  auto version_of = [&](std::int64_t id) {
    return std::stoll(test::scalar(connection, "SELECT state_version FROM communities WHERE id = $1::bigint",
                                   {std::to_string(id)}));
  };
  // A removal elsewhere (another pod, comb-admin) moves the version on.
  (void)test::scalar(connection, "UPDATE communities SET state_version = state_version + 3"
                                 " WHERE id = $1::bigint RETURNING 1", {mine});
  auto first = alice.sign(1, now);
  auto second = alice.sign(1, now + 1);
  std::vector<storage::event_write> writes{test::write_of(community, first), test::write_of(other, second),
                                           test::write_of(community, first)};
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 3);
  REQUIRE(outcomes[0].result == status::stored);
  REQUIRE(outcomes[1].result == status::stored);
  CHECK(outcomes[0].state_version == version_of(community));
  CHECK(outcomes[0].state_version >= 3);
  CHECK(outcomes[1].state_version == version_of(other));
  CHECK(outcomes[2].result == status::duplicate);
  CHECK(outcomes[2].state_version == 0); // not delivered: no version needed

  (void)test::scalar(connection, "UPDATE communities SET state_version = state_version + 1"
                                 " WHERE id = $1::bigint RETURNING 1", {mine});
  auto later = store_one(events, community, alice.sign(1, now + 2));
  REQUIRE(later.result == status::stored);
  CHECK(later.state_version == outcomes[0].state_version + 1);
}

TEST_CASE_METHOD(test::store_fixture, "every history chunk and count says the community's state version its rows were read at",
                 "[integration][event_store][access]") {
  author alice{8};
  storage::event_body_cache bodies{1 << 20};
  storage::event_store cached{connection, &bodies};
  for (int i = 0; i < 40; ++i)
    REQUIRE(store_one(events, community, alice.sign(1, now + i, {}, std::string(200, 'x'))).result == status::stored);
  // Another pod's change, after the events: a reader's pod must hold it before it sends them.
  const auto version = std::stoll(test::scalar(connection, "UPDATE communities SET state_version = state_version + 5"
                                                           " WHERE id = $1::bigint RETURNING state_version",
                                               {std::to_string(community)}));
  protocol::filter notes;
  notes.kinds = std::vector<std::uint32_t>{1};
  auto bump = [&] {
    return std::stoll(test::scalar(connection, "UPDATE communities SET state_version = state_version + 1"
                                               " WHERE id = $1::bigint RETURNING state_version",
                                   {std::to_string(community)}));
  };
  std::int64_t expected = version;
  for (auto* store : {&events, &cached}) {
    // Another change while the reply is read: the pages after it say so, and no chunk says less
    // than the pages its rows came from.
    std::vector<std::int64_t> read_at;
    auto on_chunk = [&](storage::query_result chunk) {
      read_at.push_back(chunk.state_version);
      if (read_at.size() == 1)
        expected = bump();
      return true;
    };
    const auto before = expected;
    auto last = store->query_chunks(community, {notes}, now + 100, 500, 2048, on_chunk, true);
    REQUIRE(last.ok);
    read_at.push_back(last.state_version);
    REQUIRE(read_at.size() > 2); // several pages and chunks
    CHECK(read_at.front() == before);
    CHECK(read_at.back() == expected);
    CHECK(expected == before + 1);
    CHECK(std::is_sorted(read_at.begin(), read_at.end()));
  }
  auto counted = events.count(community, {notes}, now + 100);
  REQUIRE(counted.ok);
  CHECK(counted.count == 40);
  CHECK(counted.state_version == expected);

  // No row read: nothing to hold.
  protocol::filter none;
  none.kinds = std::vector<std::uint32_t>{7};
  auto empty = cached.query_chunks(community, {none}, now + 100, 500, 2048, on_nothing, true);
  REQUIRE(empty.ok);
  CHECK(empty.state_version == 0);
}
