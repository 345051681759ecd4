// SPDX-License-Identifier: MIT
// What the relay's connections do when the server does not answer as it should (a lock held
// elsewhere, a session on a server that refuses writes, a start-up nobody answers), and how a
// writer's long work is cut so that its clients are answered between the pieces.
#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "protocol/hex.hpp"
#include "storage/migrations.hpp"
#include "storage/pg_timeouts.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace std::chrono_literals;
using comb::test::author;
using comb::test::scalar;
using status = comb::storage::store_outcome::status;

namespace {

storage::pg_reconnect_policy quick_locks() {
  storage::pg_reconnect_policy policy;
  policy.lock_timeout_ms = 300;
  return policy;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TEST_CASE_METHOD(test::store_fixture, "a batch waits for a community's held lock once, and stores the others' events",
                 "[integration][pg_connection][timeouts]") {
  // A psql session left open on one community's row (or that community's deletion running).
  auto other = add_community("other.test");
  storage::pg_connection psql(database.conninfo());
  (void)scalar(psql, "BEGIN");
  (void)scalar(psql, "SELECT id::text FROM communities WHERE id = $1::bigint FOR UPDATE", {std::to_string(community)});

  storage::pg_connection writer(database.conninfo(), quick_locks());
  storage::event_store store(writer);
  author alice{41};
  std::vector<storage::event_write> writes;
  for (int i = 0; i < 20; ++i) {
    writes.push_back(test::write_of(community, alice.sign(1, 1'700'000'000 + i)));
    if (i % 4 == 0)
      writes.push_back(test::write_of(other, alice.sign(1, 1'700'000'100 + i)));
  }
  auto start = std::chrono::steady_clock::now();
  auto outcomes = store.store_batch(writes);
  CHECK(seconds_since(start) < 3); // twice the lock timeout, not once per event
  REQUIRE(outcomes.size() == writes.size());
  for (std::size_t i = 0; i < writes.size(); ++i)
    CHECK(outcomes[i].result == (writes[i].community_id == community ? status::failed : status::stored));
  (void)scalar(psql, "ROLLBACK");
  auto again = store.store_batch(std::vector(writes.begin(), writes.begin() + 1));
  CHECK(again.front().result == status::stored);
}

TEST_CASE_METHOD(test::store_fixture, "statements ended by the lock or statement timeout are counted",
                 "[integration][pg_connection][timeouts]") {
  storage::pg_connection psql(database.conninfo());
  (void)scalar(psql, "BEGIN");
  (void)scalar(psql, "SELECT id::text FROM communities WHERE id = $1::bigint FOR UPDATE", {std::to_string(community)});
  auto policy = quick_locks();
  policy.statement_timeout_ms = 1000; // past the lock timeout (300 ms), which a lock wait meets first
  storage::pg_connection waiting(database.conninfo(), policy);
  const auto locks_before = storage::pg_timeouts().lock.load();
  const auto statements_before = storage::pg_timeouts().statement.load();
  CHECK_FALSE(waiting.exec("SELECT 1 FROM communities WHERE id = $1::bigint FOR UPDATE", {std::to_string(community)}).ok());
  CHECK(storage::pg_timeouts().lock.load() == locks_before + 1);
  CHECK(storage::pg_timeouts().statement.load() == statements_before);
  CHECK_FALSE(waiting.exec("SELECT pg_sleep(2)").ok());
  CHECK(storage::pg_timeouts().statement.load() == statements_before + 1);
  CHECK(storage::pg_timeouts().lock.load() == locks_before + 1);
  (void)scalar(psql, "ROLLBACK");
}

TEST_CASE_METHOD(test::store_fixture, "a write refused as read-only drops the session, and the next reaches a writable one",
                 "[integration][pg_connection][timeouts]") {
  // A primary demoted in a failover, or a standby the name pointed at: its sessions refuse writes.
  storage::pg_connection c(database.conninfo());
  REQUIRE(c.exec("CREATE TABLE scratch (x int)").ok());
  REQUIRE(c.exec("SET default_transaction_read_only = on").ok());
  auto refused = c.exec("INSERT INTO scratch VALUES (1)");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.sqlstate() == "25006");
  CHECK(refused.connection_lost());
  CHECK_FALSE(c.connected());
  auto next = c.exec("INSERT INTO scratch VALUES (2)");
  CHECK(next.ok());
  CHECK(c.connect_count() == 2);
}

TEST_CASE_METHOD(test::store_fixture, "a reader takes a server that refuses writes only while none takes them",
                 "[integration][pg_connection][timeouts]") {
  // Every session of this URL refuses writes, as a standby's (or a demoted primary's) does.
  const auto read_only = database.conninfo() + " options='-c default_transaction_read_only=on'";
  storage::pg_reconnect_policy writer_policy;
  writer_policy.attempts = 1;
  storage::pg_connection writer(read_only, writer_policy);
  CHECK(writer.ensure_connected()); // a writer never settles there

  storage::pg_reconnect_policy reader_policy;
  reader_policy.servers = storage::server_choice::writable_else_any;
  reader_policy.writable_recheck = std::chrono::milliseconds(300);
  storage::pg_connection reader(read_only, reader_policy);
  auto read = reader.exec("SELECT 1");
  REQUIRE(read.ok());
  CHECK(reader.connect_count() == 1);
  CHECK(reader.exec("SELECT 2").ok());
  CHECK(reader.connect_count() == 1); // kept between statements
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  // Past the recheck, the next statement looks for a writable server again (none here).
  CHECK(reader.exec("SELECT 3").ok());
  CHECK(reader.connect_count() == 2);

  storage::pg_connection on_writable(database.conninfo(), reader_policy);
  REQUIRE(on_writable.exec("SELECT 1").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  REQUIRE(on_writable.exec("SELECT 2").ok());
  CHECK(on_writable.connect_count() == 1); // a writable server's session is kept
}

TEST_CASE("a server that accepts and never answers fails the connect within seconds",
          "[integration][pg_connection][timeouts]") {
  // The kernel completes the handshake into the listen queue; nobody ever speaks (a pooler
  // waiting for a backend, a frozen postmaster).
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(silent >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(silent, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(silent, 8) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(silent, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  storage::pg_reconnect_policy once;
  once.attempts = 1;
  storage::pg_connection c("host=127.0.0.1 port=" + std::to_string(ntohs(address.sin_port)) + " dbname=x", once);
  auto start = std::chrono::steady_clock::now();
  auto error = c.ensure_connected();
  auto took = seconds_since(start);
  ::close(silent);
  REQUIRE(error);
  CHECK(took < 8);
  CHECK(took > 3);
}

TEST_CASE_METHOD(test::store_fixture, "expired events are purged a chunk at a time",
                 "[integration][event_store][timeouts]") {
  // A backlog (an import, a long downtime): the writer purges one chunk per message, so the
  // batches queued behind it are stored and answered between two.
  const auto rows = storage::event_store::purge_chunk + 7;
  (void)scalar(connection, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw, expires_at)"
                           " SELECT $1::bigint, sha256(n::text::bytea), sha256('k'::bytea), 1, 1, '{}', 10"
                           " FROM generate_series(1, $2::int) AS n RETURNING 1",
               {std::to_string(community), std::to_string(rows)});
  CHECK(events.purge_expired_chunk(11) == storage::event_store::purge_chunk);
  CHECK(events.purge_expired_chunk(11) == 7);
  CHECK(events.purge_expired_chunk(11) == 0);
}

TEST_CASE("a migration waits for another pod's as long as it takes, whatever the lock timeout",
          "[integration][migrations][timeouts]") {
  test::fresh_database db;
  storage::pg_connection first(db.conninfo());
  REQUIRE(storage::apply_migrations(first).value_or("") == "");
  // Another pod migrating: it holds the migration lock longer than a request may wait.
  storage::pg_connection other(db.conninfo());
  REQUIRE(other.exec("SELECT pg_advisory_lock(1668246882)").ok());
  storage::pg_connection starting(db.conninfo(), quick_locks());
  std::optional<std::string> error = "not run";
  auto start = std::chrono::steady_clock::now();
  {
    std::jthread migrate([&] { error = storage::apply_migrations(starting); });
    std::this_thread::sleep_for(1s);
    REQUIRE(other.exec("SELECT pg_advisory_unlock(1668246882)").ok());
  }
  CHECK(error.value_or("") == "");
  CHECK(seconds_since(start) >= 1);
  // Its requests wait as briefly as before.
  CHECK(scalar(starting, "SHOW lock_timeout") == "300ms");
}

TEST_CASE("a migration waiting for a table's lock lets the queries queued behind it through, and applies once it is free",
          "[integration][migrations][timeouts]") {
  test::fresh_database db;
  storage::pg_connection setup(db.conninfo());
  (void)scalar(setup, "CREATE TABLE exported (n int)");
  (void)scalar(setup, "INSERT INTO exported VALUES (1)");
  // A long transaction reads the table (a comb-admin export piped to a slow link).
  storage::pg_connection exporter(db.conninfo());
  (void)scalar(exporter, "BEGIN");
  (void)scalar(exporter, "SELECT count(*)::text FROM exported");
  static constexpr storage::migration adds_column[] = {{1000, "a column", "ALTER TABLE exported ADD COLUMN m int"}};
  storage::pg_connection reader(db.conninfo()); // a pod of the older build, whose requests wait 1 s at most
  (void)scalar(reader, "SET lock_timeout = '1s'");
  std::optional<std::string> error = "not run";
  {
    storage::pg_connection migrating(db.conninfo());
    std::jthread migrate([&] { error = storage::apply_migrations(migrating, adds_column, {200, 300, 100}); });
    struct ends_export { // before the join, however this block is left
      storage::pg_connection& c;
      ~ends_export() { (void)c.exec("COMMIT"); }
    } export_done{exporter};
    // The ALTER queued for its lock would hold every reader of the table behind it until the
    // export ends; waiting 200 ms at a time, it holds none for long.
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(100ms);
      CHECK(scalar(reader, "SELECT count(*)::text FROM exported") == "1");
    }
    CHECK(error == "not run");
  }
  CHECK(error.value_or("") == "");
  CHECK(scalar(setup, "SELECT count(*)::text FROM schema_migrations WHERE version = 1000") == "1");
  // Tables that stay locked fail the migration after its tries, saying why.
  (void)scalar(exporter, "BEGIN");
  (void)scalar(exporter, "SELECT count(*)::text FROM exported");
  static constexpr storage::migration drops_column[] = {{1001, "no column", "ALTER TABLE exported DROP COLUMN m"}};
  storage::pg_connection migrating(db.conninfo());
  auto gave_up = storage::apply_migrations(migrating, drops_column, {100, 50, 3});
  REQUIRE(gave_up);
  CHECK_THAT(*gave_up, Catch::Matchers::Contains("stayed locked by other sessions for 3 tries"));
  (void)scalar(exporter, "ROLLBACK");
}

TEST_CASE_METHOD(test::store_fixture, "an event whose COMMIT took effect but whose answer was lost is answered stored",
                 "[integration][pg_connection][timeouts]") {
  storage::pg_connection admin(database.conninfo());
  // The COMMIT waits for a synchronous standby that never comes: it has taken effect here and
  // is not answered; the server then drops the session, as a crash or failover would.
  struct standby_wanted {
    storage::pg_connection& admin;
    explicit standby_wanted(storage::pg_connection& a) : admin(a) { set("'nobody'"); }
    ~standby_wanted() { set("''"); }
    void set(const std::string& names) {
      (void)admin.exec("ALTER SYSTEM SET synchronous_standby_names = " + names);
      (void)admin.exec("SELECT pg_reload_conf()");
    }
  };
  storage::pg_connection writer(database.conninfo());
  storage::event_store store(writer);
  REQUIRE_FALSE(writer.ensure_connected());
  const std::string pid = std::to_string(writer.backend_pid());
  author alice{42};
  auto ev = alice.sign(1, 1'700'000'000);
  std::vector<storage::store_outcome> outcomes;
  {
    standby_wanted standby(admin);
    std::this_thread::sleep_for(500ms); // the reload reaches every process
    std::thread storing([&] { outcomes = store.store_batch(std::vector{test::write_of(community, ev)}); });
    bool waiting = false;
    for (int i = 0; i < 100 && !waiting; ++i) {
      std::this_thread::sleep_for(50ms);
      waiting = scalar(admin, "SELECT coalesce(wait_event, '') FROM pg_stat_activity WHERE pid = $1::int", {pid}) == "SyncRep";
    }
    (void)scalar(admin, "SELECT pg_terminate_backend($1::int)::text", {pid});
    storing.join();
    REQUIRE(waiting);
  }
  REQUIRE(outcomes.size() == 1);
  CHECK(outcomes[0].result == status::stored);
  CHECK(outcomes[0].state_version == storage::unknown_state_version);
  CHECK(scalar(admin, "SELECT count(*) FROM events") == "1");
  // Sent again, it is a duplicate, as it should be.
  CHECK(store.store_batch(std::vector{test::write_of(community, ev)}).front().result == status::duplicate);
}
