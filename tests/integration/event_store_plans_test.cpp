// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "protocol/hex.hpp"
#include "storage/event_store.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace std::chrono_literals;
using comb::test::author;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

/// Sequential scans of `table` counted by Postgres's statistics so far.
std::int64_t seq_scans(storage::pg_connection& c, const std::string& table) {
  return std::stoll(test::scalar(c, "SELECT coalesce(seq_scan, 0) FROM pg_stat_user_tables"
                                    " WHERE relname = $1",
                                 {table}));
}

std::int64_t inserted_events(storage::pg_connection& c) {
  return std::stoll(test::scalar(c, "SELECT coalesce(n_tup_ins, 0) FROM pg_stat_user_tables"
                                    " WHERE relname = 'events'"));
}

/// Waits (bounded, 5 s) until the events a finished backend inserted show in the statistics.
bool inserts_reported(storage::pg_connection& c, std::int64_t count) {
  for (int i = 0; i < 500; ++i) {
    if (inserted_events(c) >= count)
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

// A writer's statements are prepared and run their generic plans, planned once per connection,
// often while the tables are still new: a plan that joined the batch's keys to a table could then
// scan the whole table for every batch, for as long as the plan lived. Each statement must probe
// its table's index per key whatever the table's statistics say.
TEST_CASE_METHOD(test::store_fixture, "a writer's batches never scan a whole table, even a new one",
                 "[integration][event_store]") {
  const char* tables[] = {"events", "deleted_events", "deleted_addresses", "banned_events",
                          "banned_pubkeys"};
  // What the fixture's own connection did (migrations, the community) is counted first.
  (void)test::scalar(connection, "SELECT pg_stat_force_next_flush()");
  (void)test::scalar(connection, "SELECT 1");
  std::map<std::string, std::int64_t> before;
  for (const char* table : tables)
    before[table] = seq_scans(connection, table);
  {
    storage::pg_connection writer(database.conninfo());
    storage::event_store store(writer);
    author alice{21};
    for (int batch = 0; batch < 12; ++batch) {
      const std::int64_t at = now - 100 + batch;
      auto note = alice.sign(1, at, {{"t", "n"}, {"e", std::string(64, 'a')}});
      auto profile = alice.sign(0, at);                      // replaces the previous batch's
      auto article = alice.sign(30023, at, {{"d", "post"}}); // likewise, by address
      std::vector writes{test::write_of(community, note), test::write_of(community, profile),
                         test::write_of(community, article)};
      auto outcomes = store.store_batch(writes);
      REQUIRE(outcomes.size() == 3);
      for (const auto& outcome : outcomes)
        CHECK(outcome.result == status::stored);
      auto deletion = alice.sign(5, at, {{"e", protocol::to_hex(note->id)}});
      auto again = store.store_batch(std::vector{test::write_of(community, deletion),
                                                 test::write_of(community, note)});
      REQUIRE(again.size() == 2);
      CHECK(again[0].result == status::stored);
      CHECK(again[1].result != status::stored); // deleted by the event before it
    }
  } // the writer's backend ends here and reports its statistics
  REQUIRE(inserts_reported(connection, 48));
  for (const char* table : tables) {
    INFO(table);
    CHECK(seq_scans(connection, table) == before[table]);
  }
}
