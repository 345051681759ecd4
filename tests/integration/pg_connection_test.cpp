// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "storage/database_clock.hpp"
#include "storage/pg_array.hpp"
#include "support/pg_test_database.hpp"

using namespace comb;
using namespace std::chrono_literals;
using comb::test::scalar;

namespace {

void terminate_backend(int pid) {
  storage::pg_connection killer(test::admin_conninfo());
  CHECK(scalar(killer, "SELECT pg_terminate_backend($1::int)", {std::to_string(pid)}) == "t");
  // pg_terminate_backend only signals; wait until the backend is really gone.
  for (int i = 0; i < 100; ++i) {
    if (scalar(killer, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int",
               {std::to_string(pid)})
        == "0")
      return;
    std::this_thread::sleep_for(20ms);
  }
  FAIL("backend " << pid << " did not exit");
}

} // namespace

TEST_CASE("values travel as parameters, quotes and all", "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string tricky = "it's a \"test\"; DROP TABLE x; -- \\ {,}";
  auto reply = c.exec("SELECT $1::text, $2::text IS NULL", {tricky, std::nullopt});
  REQUIRE(reply.ok());
  CHECK(reply.text(0, 0) == tricky);
  CHECK(reply.text(0, 1) == "t");
}

TEST_CASE("binary array parameters arrive as the values they were built from",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  using element = storage::pg_binary_array::element;
  storage::pg_binary_array texts(element::text), ids(element::bytea), big(element::int8),
    small(element::int4), none(element::text);
  // What a literal would have to escape: quotes, backslashes, commas, braces, the word NULL.
  const std::string json = R"({"content":"a \"quote\", {braces}, NULL \\ ð"})";
  texts.add_bytes(std::string_view(json));
  texts.add_null();
  texts.add_bytes(std::string_view(""));
  const std::uint8_t raw_id[3] = {0x00, 0x7f, 0xff};
  ids.add_bytes(std::span<const std::uint8_t>(raw_id));
  big.add_integer(-5);
  big.add_integer(1'764'000'000'123);
  small.add_integer(30023);
  small.add_null();
  auto reply = c.exec(
    "SELECT $1::text[] = ARRAY[$6::text, NULL, ''], encode(($2::bytea[])[1], 'hex'),"
    " $3::bigint[]::text, $4::int[]::text, cardinality($5::text[])",
    {texts.str(), ids.str(), big.str(), small.str(), none.str(), json},
    {true, true, true, true, true});
  REQUIRE(reply.ok());
  CHECK(reply.text(0, 0) == "t");
  CHECK(reply.text(0, 1) == "007fff");
  CHECK(reply.text(0, 2) == "{-5,1764000000123}");
  CHECK(reply.text(0, 3) == "{30023,NULL}");
  CHECK(reply.text(0, 4) == "0");
  // The element type is part of the value: a text array where integers are expected is refused.
  auto wrong = c.exec("SELECT cardinality($1::int[])", {texts.str()}, {true});
  CHECK_FALSE(wrong.ok());
  CHECK(c.exec("SELECT 1").ok());
}

TEST_CASE("rows asked for in binary form come as raw bytes and big-endian integers",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  REQUIRE(c.exec("CREATE TEMP TABLE b (v int)").ok());
  REQUIRE(c.exec("INSERT INTO b VALUES (1)").ok());
  const std::string sql = "SELECT $1::bigint, -7::bigint, 30023::int, decode('007fff', 'hex'),"
                          " 'a \"text\"'::text, NULL::bigint, xmin, xmin::text FROM b";
  storage::pg_formats binary{false, {}, true};
  for (int round = 0; round < 2; ++round) { // unprepared the first time, then prepared
    INFO("round " << round);
    auto reply = c.exec_with(sql, {"1764000000123"}, binary);
    REQUIRE(reply.ok());
    REQUIRE(reply.rows() == 1);
    CHECK(reply.binary_integer(0, 0) == 1'764'000'000'123);
    CHECK(reply.binary_integer(0, 1) == -7);
    CHECK(reply.binary_integer(0, 2) == 30023);
    CHECK(reply.text(0, 3) == std::string_view("\x00\x7f\xff", 3));
    CHECK(reply.text(0, 4) == "a \"text\"");
    CHECK(reply.is_null(0, 5));
    CHECK(reply.binary_integer(0, 5) == 0);
    // An xid comes as four bytes, read unsigned: the same number as its text form.
    CHECK(std::to_string(reply.binary_integer(0, 6)) == reply.text(0, 7));
  }
  // Text rows are unchanged beside them, and a pipeline can ask for binary rows too.
  CHECK(c.exec(sql, {"5"}).text(0, 0) == "5");
  const storage::pg_params five{"5"};
  auto piped = c.exec_pipeline({{sql, &five, {}, true}, {sql, &five, {}}});
  REQUIRE(piped.size() == 2);
  CHECK(piped[0].binary_integer(0, 0) == 5);
  CHECK(piped[1].text(0, 0) == "5");
}

TEST_CASE("binary COPY rows arrive as the values they were built from; a failed COPY is an error value",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  REQUIRE(c.exec("CREATE TEMP TABLE copied (n BIGINT PRIMARY KEY, k INTEGER, b BYTEA, t TEXT)").ok());
  const std::string json = R"({"content":"a \"quote\",\t{braces}\\N NULL ð"})";
  const std::uint8_t raw_id[3] = {0x00, 0x7f, 0xff};
  storage::pg_copy_rows rows(4);
  rows.row();
  rows.add_int8(-1'764'000'000'123);
  rows.add_int4(30023);
  rows.add_bytes(std::span<const std::uint8_t>(raw_id));
  rows.add_bytes(std::string_view(json));
  rows.row();
  rows.add_int8(2);
  rows.add_null();
  rows.add_null();
  rows.add_bytes(std::string_view(""));
  constexpr const char* copy = "COPY copied (n, k, b, t) FROM STDIN (FORMAT binary)";
  auto loaded = c.copy_in(copy, rows.str());
  REQUIRE(loaded.ok());
  CHECK(loaded.affected_rows() == 2);
  CHECK(scalar(c, "SELECT k::text || ' ' || encode(b, 'hex') FROM copied WHERE n = -1764000000123")
        == "30023 007fff");
  CHECK(scalar(c, "SELECT t = $1::text FROM copied WHERE n = -1764000000123", {json}) == "t");
  CHECK(scalar(c, "SELECT k IS NULL AND b IS NULL AND t = '' FROM copied WHERE n = 2") == "t");
  // The same rows again break the primary key: the error, its SQLSTATE, and a usable connection.
  auto again = c.copy_in(copy, rows.str());
  CHECK_FALSE(again.ok());
  CHECK(again.sqlstate() == "23505");
  CHECK_FALSE(again.connection_lost());
  CHECK(scalar(c, "SELECT count(*) FROM copied") == "2");
}

TEST_CASE("errors come back as values with their SQLSTATE", "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  auto reply = c.exec("SELECT * FROM no_such_table");
  CHECK_FALSE(reply.ok());
  CHECK(reply.sqlstate() == "42P01");
  CHECK(reply.error().find("no_such_table") != std::string::npos);
  CHECK_FALSE(reply.connection_lost());
  CHECK(c.exec("SELECT 1").ok());
}

TEST_CASE("server notices are collected instead of printed", "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  REQUIRE(c.exec("DO $$ BEGIN RAISE NOTICE 'hello from the server'; END $$").ok());
  auto notices = c.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK(notices.front().find("hello from the server") != std::string::npos);
  CHECK(c.take_notices().empty());
}

TEST_CASE("a terminated backend is replaced by the next call", "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  REQUIRE(c.exec("SELECT 1").ok());
  int pid = c.backend_pid();
  REQUIRE(pid != 0);
  terminate_backend(pid);
  auto reply = c.exec("SELECT 2"); // may fail once, if the loss is only seen now
  if (!reply.ok())
    CHECK(reply.connection_lost());
  auto next = c.exec("SELECT 3");
  REQUIRE(next.ok());
  CHECK(next.text(0, 0) == "3");
  CHECK(c.backend_pid() != pid);
  CHECK(c.connect_count() == 2);
}

TEST_CASE("a connection lost inside a transaction never runs the rest in autocommit",
          "[integration][pg_connection]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE(c.exec("CREATE TABLE t (x int)").ok());
  REQUIRE(c.exec("BEGIN").ok());
  REQUIRE(c.exec("INSERT INTO t VALUES (1)").ok());
  terminate_backend(c.backend_pid());
  auto insert = c.exec("INSERT INTO t VALUES (2)");
  CHECK_FALSE(insert.ok());
  CHECK(insert.connection_lost());
  // Like an aborted transaction: nothing runs until the caller ends it.
  CHECK_FALSE(c.exec("INSERT INTO t VALUES (3)").ok());
  CHECK_FALSE(c.exec("SELECT 1").ok());
  CHECK(c.exec("ROLLBACK").ok());
  auto rows = c.exec("SELECT count(*) FROM t"); // a new connection, outside any transaction
  REQUIRE(rows.ok());
  CHECK(rows.text(0, 0) == "0");
  CHECK(c.connect_count() == 2);
}

TEST_CASE("a commit whose connection was lost reports failure, then work resumes",
          "[integration][pg_connection]") {
  test::fresh_database db;
  storage::pg_connection c(db.conninfo());
  REQUIRE(c.exec("CREATE TABLE t (x int)").ok());
  REQUIRE(c.exec("BEGIN").ok());
  REQUIRE(c.exec("INSERT INTO t VALUES (1)").ok());
  terminate_backend(c.backend_pid());
  CHECK_FALSE(c.exec("INSERT INTO t VALUES (2)").ok());
  CHECK_FALSE(c.exec("COMMIT").ok());
  CHECK(c.exec("INSERT INTO t VALUES (4)").ok()); // autocommit on a fresh connection
  CHECK(scalar(c, "SELECT string_agg(x::text, ',') FROM t") == "4");
}

TEST_CASE("cancel from another thread stops a running statement",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  REQUIRE(c.exec("SELECT 1").ok());
  auto started = std::chrono::steady_clock::now();
  std::jthread canceller([&] {
    std::this_thread::sleep_for(300ms);
    CHECK(c.cancel());
  });
  auto reply = c.exec("SELECT pg_sleep(30)");
  CHECK_FALSE(reply.ok());
  CHECK(reply.sqlstate() == "57014");
  CHECK(std::chrono::steady_clock::now() - started < 10s);
  canceller.join();
  CHECK(c.exec("SELECT 1").ok()); // the connection itself survives a cancel
}

TEST_CASE("an unreachable server is an error value after bounded attempts",
          "[integration][pg_connection]") {
  storage::pg_connection c("host=127.0.0.1 port=1 connect_timeout=2 dbname=x",
                           storage::pg_reconnect_policy{2, 10ms});
  auto error = c.ensure_connected();
  REQUIRE(error);
  CHECK_FALSE(error->empty());
  auto reply = c.exec("SELECT 1");
  CHECK_FALSE(reply.ok());
  CHECK(reply.connection_lost());
  CHECK(c.connect_count() == 0);
}

namespace {

std::string prepared_count(storage::pg_connection& c, const std::string& text) {
  // No parameters: this look-up itself is never prepared.
  auto escaped = text;
  for (std::size_t at = escaped.find('\''); at != std::string::npos; at = escaped.find('\'', at + 2))
    escaped.insert(at, 1, '\'');
  auto reply = c.exec("SELECT count(*) FROM pg_prepared_statements WHERE statement = '" + escaped + "'");
  return reply.ok() ? std::string(reply.text(0, 0)) : reply.error();
}

} // namespace

TEST_CASE("a statement with parameters is prepared once per connection and reused",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string text = "SELECT $1::int + 1";
  for (int i = 0; i < 3; ++i) {
    auto reply = c.exec(text, {std::to_string(i)});
    REQUIRE(reply.ok());
    CHECK(reply.integer(0, 0) == i + 1);
  }
  CHECK(prepared_count(c, text) == "1");
}

TEST_CASE("a prepared statement the server forgot is prepared again",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string text = "SELECT $1::text || 'x'";
  REQUIRE(c.exec(text, {"a"}).ok());
  REQUIRE(c.exec("DEALLOCATE ALL").ok()); // what a pooler's fresh backend would look like
  auto again = c.exec(text, {"b"});
  REQUIRE(again.ok());
  CHECK(again.text(0, 0) == "bx");
  CHECK(prepared_count(c, text) == "1");
}

TEST_CASE("a forgotten prepared statement sent with its plan mode switch is prepared again",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string fixed = "SELECT current_setting('plan_cache_mode') WHERE $1::int = 1";
  const std::string other = "SELECT $1::int";
  for (int round = 0; round < 2; ++round) {
    REQUIRE(c.exec(fixed, {"1"}, true).ok());
    REQUIRE(c.exec(other, {"2"}).ok()); // back to auto: the next generic statement switches
    REQUIRE(c.exec("DEALLOCATE ALL").ok());
    // The switch and the forgotten statement go in one pipeline; the statement fails there
    // (26000), which rolls the switch back, and is prepared and sent again, with its switch.
    auto again = c.exec(fixed, {"1"}, true);
    INFO(again.error() << " " << again.sqlstate());
    REQUIRE(again.ok());
    REQUIRE(again.rows() == 1);
    CHECK(again.text(0, 0) == "force_generic_plan");
    CHECK(prepared_count(c, fixed) == "1");
  }
  // Inside a transaction nothing is sent twice: the failure is the caller's.
  REQUIRE(c.exec(other, {"3"}).ok());
  REQUIRE(c.exec("DEALLOCATE ALL").ok());
  REQUIRE(c.exec("BEGIN").ok());
  auto in_transaction = c.exec(other, {"4"});
  CHECK(in_transaction.sqlstate() == "26000");
  REQUIRE(c.exec("ROLLBACK").ok());
  auto after = c.exec(other, {"5"});
  REQUIRE(after.ok());
  CHECK(after.integer(0, 0) == 5);
}

TEST_CASE("prepared statements are prepared again on a new connection",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string text = "SELECT $1::int * 2";
  REQUIRE(c.exec(text, {"2"}).ok());
  terminate_backend(c.backend_pid());
  (void)c.exec(text, {"3"}); // may fail once, if the loss is only seen now
  auto next = c.exec(text, {"4"});
  REQUIRE(next.ok());
  CHECK(next.integer(0, 0) == 8);
  CHECK(prepared_count(c, text) == "1");
}

TEST_CASE("a statement asked for a generic plan gets one; other statements keep auto",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string text = "SELECT current_setting('plan_cache_mode') WHERE $1::int = 1";
  for (int i = 0; i < 2; ++i) {
    auto generic = c.exec(text, {"1"}, true);
    REQUIRE(generic.ok());
    REQUIRE(generic.rows() == 1);
    CHECK(generic.text(0, 0) == "force_generic_plan");
  }
  auto plans = c.exec("SELECT generic_plans, custom_plans, current_setting('plan_cache_mode')"
                      " FROM pg_prepared_statements WHERE statement = $1::text",
                      {text});
  REQUIRE(plans.ok());
  REQUIRE(plans.rows() == 1);
  CHECK(plans.integer(0, 0) == 2);
  CHECK(plans.integer(0, 1) == 0);
  CHECK(plans.text(0, 2) == "auto"); // exec() switched the session back
  auto custom = c.exec(text, {"1"});
  REQUIRE(custom.ok());
  REQUIRE(custom.rows() == 1);
  CHECK(custom.text(0, 0) == "auto");
}

TEST_CASE("a pipeline runs its statements in order in one round trip, and stops at a failure",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const storage::pg_params one{"1"};
  const storage::pg_params oops{"not a number"};
  const storage::pg_params two{"2"};
  using pipelined = storage::pg_connection::pipelined;
  REQUIRE(c.exec("CREATE TEMP TABLE p (v int)").ok());
  SECTION("every statement succeeds, in order, inside the transaction the first opens") {
    auto replies = c.exec_pipeline({pipelined{"BEGIN", nullptr, {}},
                                    pipelined{"INSERT INTO p VALUES ($1::int)", &one, {}},
                                    pipelined{"SELECT count(*), max(v) FROM p", nullptr, {}}});
    REQUIRE(replies.size() == 3);
    for (const auto& reply : replies)
      CHECK(reply.ok());
    CHECK(replies[2].text(0, 0) == "1");
    CHECK(replies[2].text(0, 1) == "1");
    REQUIRE(c.exec("ROLLBACK").ok()); // the pipeline left the transaction open
    CHECK(scalar(c, "SELECT count(*) FROM p") == "0");
  }
  SECTION("after a failure the rest is skipped, and the connection goes on") {
    auto replies = c.exec_pipeline({pipelined{"BEGIN", nullptr, {}},
                                    pipelined{"INSERT INTO p VALUES ($1::int)", &oops, {}},
                                    pipelined{"INSERT INTO p VALUES ($1::int)", &two, {}}});
    REQUIRE(replies.size() == 3);
    CHECK(replies[0].ok());
    CHECK(replies[1].sqlstate() == "22P02");
    CHECK_FALSE(replies[2].ok());
    CHECK_FALSE(replies[2].connection_lost());
    REQUIRE(c.exec("ROLLBACK").ok());
    CHECK(scalar(c, "SELECT count(*) FROM p") == "0");
    auto again = c.exec_pipeline({pipelined{"INSERT INTO p VALUES ($1::int)", &two, {}},
                                  pipelined{"SELECT max(v) FROM p", nullptr, {}}});
    REQUIRE(again.size() == 2);
    CHECK(again[1].text(0, 0) == "2");
  }
  SECTION("a lost backend fails every statement as lost, and the next call reconnects") {
    terminate_backend(c.backend_pid());
    auto replies = c.exec_pipeline({pipelined{"SELECT 1", nullptr, {}},
                                    pipelined{"SELECT $1::int", &two, {}}});
    // The first call finds the socket closed before sending and reconnects, or sends and
    // learns of the loss: either way no reply is a wrong success.
    for (const auto& reply : replies)
      CHECK((reply.ok() || reply.connection_lost()));
    auto after = c.exec_pipeline({pipelined{"SELECT $1::int", &two, {}}});
    REQUIRE(after.size() == 1);
    CHECK(after[0].text(0, 0) == "2");
  }
  SECTION("a COMMIT read before the connection is lost stands; only what came after fails") {
    test::fresh_database db;
    storage::pg_connection own(db.conninfo());
    REQUIRE(own.exec("CREATE TABLE kept (v int)").ok());
    REQUIRE(own.exec("BEGIN").ok());
    REQUIRE(own.exec("INSERT INTO kept VALUES (1)").ok());
    // The backend ends itself after the COMMIT, before the pipeline's end: the writer's case of
    // a link lost between its COMMIT and the version read after it.
    auto replies = own.exec_pipeline({pipelined{"COMMIT", nullptr, {}},
                                      pipelined{"SELECT pg_terminate_backend(pg_backend_pid())", nullptr, {}}});
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].ok());
    CHECK_FALSE(replies[1].ok());
    CHECK(replies[1].connection_lost());
    CHECK(scalar(own, "SELECT count(*) FROM kept") == "1"); // on a new connection
  }
}

TEST_CASE("exec switches the plan mode with its statement, mode after mode",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  const std::string fixed = "SELECT current_setting('plan_cache_mode') WHERE $1::int = 1";
  const std::string other = "SELECT current_setting('plan_cache_mode') WHERE $1::int = 2";
  // Mixed traffic: a generic-plan statement, then another, ten times over; each ran in the
  // mode it asked for, so the switch reached the server before the statement.
  for (int i = 0; i < 10; ++i) {
    auto generic = c.exec(fixed, {"1"}, true);
    REQUIRE(generic.ok());
    REQUIRE(generic.rows() == 1);
    CHECK(generic.text(0, 0) == "force_generic_plan");
    auto automatic = c.exec(other, {"2"});
    REQUIRE(automatic.ok());
    REQUIRE(automatic.rows() == 1);
    CHECK(automatic.text(0, 0) == "auto");
  }
  auto plans = c.exec("SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                      " WHERE statement = $1::text", {fixed});
  REQUIRE(plans.ok());
  REQUIRE(plans.rows() == 1);
  CHECK(plans.integer(0, 0) == 10);
  CHECK(plans.integer(0, 1) == 0);
  // A statement that fails takes its switch with it (one implicit transaction): the next one
  // asking for the generic plan still gets it.
  auto failed = c.exec("SELECT 1 / $1::int", {"0"}, true);
  CHECK_FALSE(failed.ok());
  CHECK(failed.sqlstate() == "22012");
  auto after = c.exec(fixed, {"1"}, true);
  REQUIRE(after.ok());
  REQUIRE(after.rows() == 1);
  CHECK(after.text(0, 0) == "force_generic_plan");
  // A lost backend between two switches: the next switch reconnects and still applies.
  REQUIRE(c.exec(other, {"2"}).ok());
  terminate_backend(c.backend_pid());
  (void)c.exec(fixed, {"1"}, true); // may fail once, if the loss is only seen now
  auto again = c.exec(fixed, {"1"}, true);
  REQUIRE(again.ok());
  REQUIRE(again.rows() == 1);
  CHECK(again.text(0, 0) == "force_generic_plan");
}

TEST_CASE("the database's clock offset is measured in ms, near zero on one machine",
          "[integration][pg_connection]") {
  storage::pg_connection c(test::admin_conninfo());
  auto offset = storage::database_clock_offset_ms(c);
  REQUIRE(offset);
  CHECK(std::abs(*offset) < 1000);
}
