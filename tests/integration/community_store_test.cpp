// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <thread>

#include "storage/migrations.hpp"
#include "support/pg_test_database.hpp"

using namespace comb;

TEST_CASE("ensure creates a community once and finds it by any of its hosts",
          "[integration][community_store]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  storage::community_store store(c);
  CHECK_FALSE(store.find_by_host("relay.example"));
  CHECK(store.last_error().empty());

  auto made = store.ensure("Relay.Example:443", {"localhost:7777", "127.0.0.1:7777"}, false);
  INFO(store.last_error());
  REQUIRE(made);
  CHECK(made->host == "relay.example");
  CHECK_FALSE(made->closed);
  CHECK_FALSE(made->archived);

  for (const char* host : {"relay.example", "RELAY.EXAMPLE.", "localhost:7777", "127.0.0.1:7777"}) {
    auto found = store.find_by_host(host);
    INFO(host);
    REQUIRE(found);
    CHECK(found->id == made->id);
    CHECK(found->host == "relay.example");
  }
  CHECK_FALSE(store.find_by_host("localhost:7778"));
  CHECK_FALSE(store.find_by_host("not a host"));

  // Idempotent; the access given applies only at creation: afterwards the database decides.
  auto again = store.ensure("relay.example", {"localhost:7777"}, true);
  REQUIRE(again);
  CHECK(again->id == made->id);
  CHECK_FALSE(again->closed);
  CHECK_FALSE(store.find_by_host("localhost:7777")->closed);
  CHECK(test::scalar(c, "SELECT count(*) FROM communities") == "1");
  auto key = protocol::key_pair::generate();
  REQUIRE(store.set_access(made->id, true, key, 1'700'000'000).result
          == storage::lifecycle_result::changed);
  auto restarted = store.ensure("relay.example", {"localhost:7777"}, false);
  REQUIRE(restarted);
  CHECK(restarted->closed); // a restart never reopens a community the operator closed
}

TEST_CASE("an alias held by another community stays with it", "[integration][community_store]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE_FALSE(storage::apply_migrations(c));
  storage::community_store store(c);
  auto first = store.ensure("one.example", {"shared.example"}, false);
  auto second = store.ensure("two.example", {"shared.example", "two-alias.example"}, false);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->id != second->id);
  CHECK(store.find_by_host("shared.example")->id == first->id);
  CHECK(store.find_by_host("two-alias.example")->id == second->id);
  // Ensuring a host that is another community's alias means that community.
  auto via_alias = store.ensure("shared.example", {}, true);
  REQUIRE(via_alias);
  CHECK(via_alias->id == first->id);
  CHECK_FALSE(store.find_by_host("one.example")->closed);
}

TEST_CASE("pods ensuring the same community at once get the same row",
          "[integration][community_store]") {
  test::fresh_database db;
  {
    storage::pg_connection c(db.conninfo());
    REQUIRE_FALSE(storage::apply_migrations(c));
  }
  std::vector<std::int64_t> ids(4, 0);
  {
    std::vector<std::jthread> pods;
    for (std::size_t i = 0; i < ids.size(); ++i)
      pods.emplace_back([&, i] {
        storage::pg_connection c(db.conninfo());
        storage::community_store store(c);
        if (auto row = store.ensure("race.example", {"localhost:7777"}, false))
          ids[i] = row->id;
      });
  }
  for (auto id : ids)
    CHECK(id == ids.front());
  CHECK(ids.front() != 0);
  storage::pg_connection c(db.conninfo());
  CHECK(test::scalar(c, "SELECT count(*) FROM communities") == "1");
  CHECK(test::scalar(c, "SELECT count(*) FROM community_hosts") == "2");
}

TEST_CASE("a database failure is reported through last_error, not thrown",
          "[integration][community_store]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo()); // no migrations: the tables are missing
  storage::community_store store(c);
  CHECK_FALSE(store.find_by_host("relay.example"));
  CHECK_FALSE(store.last_error().empty());
  CHECK_FALSE(store.ensure("relay.example", {}, false));
  CHECK_FALSE(store.last_error().empty());
}
