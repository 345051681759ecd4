// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "storage/event_store.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

// Migration 18: events keep to existing communities through row locks instead of a foreign key.
// Both orders of a race between storing events and deleting their community end with no event
// left in a community that does not exist.

using namespace comb;
using comb::test::author;
using comb::test::scalar;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

int connected_pid(storage::pg_connection& c) {
  REQUIRE_FALSE(c.ensure_connected());
  return c.backend_pid();
}

} // namespace

TEST_CASE_METHOD(test::store_fixture, "events have no foreign key and go with their community",
                 "[integration][migrations]") {
  CHECK(scalar(connection, "SELECT count(*) FROM pg_constraint WHERE contype = 'f'"
                           " AND conrelid = 'events'::regclass") == "0");
  author alice{31};
  REQUIRE(test::store_one(events, community, alice.sign(1, now, {{"t", "x"}})).result
          == status::stored);
  const std::int64_t other = add_community("b.example");
  REQUIRE(test::store_one(events, other, alice.sign(1, now - 1)).result == status::stored);
  scalar(connection, "DELETE FROM communities WHERE id = $1::bigint RETURNING 1",
         {std::to_string(community)});
  CHECK(scalar(connection, "SELECT count(*) FROM events WHERE community_id = $1::bigint",
               {std::to_string(community)}) == "0");
  CHECK(scalar(connection, "SELECT count(*) FROM event_tags") == "0");
  CHECK(scalar(connection, "SELECT count(*) FROM events") == "1"); // the other community's
}

TEST_CASE_METHOD(test::store_fixture,
                 "a batch for a community being deleted waits for the deletion, then fails",
                 "[integration][event_store]") {
  storage::pg_connection deleter(database.conninfo());
  REQUIRE(deleter.exec("BEGIN").ok());
  scalar(deleter, "DELETE FROM communities WHERE id = $1::bigint RETURNING 1",
         {std::to_string(community)});
  storage::pg_connection writer(database.conninfo());
  storage::event_store store(writer);
  const int writer_pid = connected_pid(writer);
  author alice{32};
  std::vector writes{test::write_of(community, alice.sign(1, now)),
                     test::write_of(community, alice.sign(1, now - 1))};
  std::vector<storage::store_outcome> outcomes;
  std::thread batch([&] { outcomes = store.store_batch(writes); });
  storage::pg_connection observer(database.conninfo());
  const bool waited = test::blocked_on_lock(observer, writer_pid);
  REQUIRE(deleter.exec("COMMIT").ok());
  batch.join();
  CHECK(waited);
  REQUIRE(outcomes.size() == 2);
  for (const auto& outcome : outcomes)
    CHECK(outcome.result == status::failed);
  CHECK(scalar(observer, "SELECT count(*) FROM events") == "0");
}

TEST_CASE_METHOD(test::store_fixture,
                 "deleting a community waits for a transaction storing into it, then deletes that",
                 "[integration][event_store]") {
  const std::string id = std::to_string(community);
  // What a writer's batch does: lock the community's row (its snapshot), insert, commit later.
  storage::pg_connection inserter(database.conninfo());
  REQUIRE(inserter.exec("BEGIN").ok());
  REQUIRE(scalar(inserter, "SELECT 1 FROM communities WHERE id = $1::bigint FOR KEY SHARE", {id})
          == "1");
  scalar(inserter, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
                   " VALUES ($1::bigint, '\\x01', '\\x02', 1, 1, '{}') RETURNING 1", {id});
  scalar(inserter, "INSERT INTO event_tags VALUES ($1::bigint, '\\x01', 't', 'v', 1, 1)"
                   " RETURNING 1", {id});
  storage::pg_connection deleter(database.conninfo());
  const int deleter_pid = connected_pid(deleter);
  storage::pg_reply deleted;
  std::thread deletion([&] {
    deleted = deleter.exec("DELETE FROM communities WHERE id = $1::bigint", {id});
  });
  storage::pg_connection observer(database.conninfo());
  const bool waited = test::blocked_on_lock(observer, deleter_pid);
  REQUIRE(inserter.exec("COMMIT").ok());
  deletion.join();
  CHECK(waited);
  REQUIRE(deleted.ok());
  CHECK(deleted.affected_rows() == 1);
  CHECK(scalar(observer, "SELECT count(*) FROM events") == "0");
  CHECK(scalar(observer, "SELECT count(*) FROM event_tags") == "0");
}
