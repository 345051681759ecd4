// SPDX-License-Identifier: MIT
// Storage-side bounds: the history byte budget, statement_timeout on reader connections and the
// purge of expired invites.
#include <catch2/catch.hpp>

#include "storage/invite_store.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;

namespace {
constexpr std::int64_t now = 1'700'000'000;
}

TEST_CASE_METHOD(test::store_fixture, "a history reply stops at its byte budget, newest first",
                 "[integration][bounds]") {
  test::author alice{1};
  std::vector<test::event_ptr> stored;
  for (int i = 0; i < 10; ++i) {
    stored.push_back(alice.sign(1, now - 100 + i, {}, std::string(1000, 'x')));
    REQUIRE(test::store_one(events, community, stored.back()).result
            == storage::store_outcome::status::stored);
  }
  auto whole = events.query(community, {protocol::filter{}}, now, 100);
  REQUIRE(whole.ok);
  CHECK(whole.events.size() == 10);
  CHECK_FALSE(whole.truncated);
  std::size_t one = whole.events.front().size();
  auto cut = events.query(community, {protocol::filter{}}, now, 100, 3 * one + one / 2);
  REQUIRE(cut.ok);
  CHECK(cut.truncated);
  CHECK(cut.events == std::vector<std::string>(whole.events.begin(), whole.events.begin() + 3));
  // One event is always returned, even over the budget.
  auto tiny = events.query(community, {protocol::filter{}}, now, 100, 1);
  CHECK(tiny.events.size() == 1);
}

TEST_CASE_METHOD(test::store_fixture, "reader connections cancel statements past statement_timeout",
                 "[integration][bounds]") {
  storage::pg_reconnect_policy policy;
  policy.statement_timeout_ms = 200;
  storage::pg_connection reader(database.conninfo(), policy);
  auto slow = reader.exec("SELECT pg_sleep(2)");
  CHECK_FALSE(slow.ok());
  CHECK_THAT(slow.error(), Catch::Contains("statement timeout"));
  CHECK(reader.exec("SELECT 1").ok()); // the connection itself is fine
}

TEST_CASE_METHOD(test::store_fixture, "expired invites are purged, live ones kept",
                 "[integration][bounds]") {
  auto add = [&](const std::string& hash, std::int64_t expires) {
    REQUIRE(connection.exec("INSERT INTO invites (community_id, code_hash, expires_at) VALUES ($1::bigint, $2, $3::bigint)",
                            {std::to_string(community), hash, std::to_string(expires)}).ok());
  };
  for (int i = 0; i < 1500; ++i)
    add("old" + std::to_string(i), now - 10);
  add("live", now + 3600);
  storage::invite_store invites(connection);
  CHECK(invites.purge_expired(now) == 1500);
  CHECK(test::scalar(connection, "SELECT string_agg(code_hash, ',') FROM invites") == "live");
  CHECK(invites.purge_expired(now) == 0);
}
