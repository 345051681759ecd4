// SPDX-License-Identifier: MIT
// A storage reader actor against a real Postgres: what it reads for whom.
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <atomic>
#include <optional>
#include <thread>

#include "actors/clock.hpp"
#include "actors/gateway/websocket_outbox.hpp"
#include "actors/messages.hpp"
#include "actors/storage/storage_actors.hpp"
#include "storage/pg_connection.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::actors;

namespace {

/// A reader with a small history budget, over a community holding `count` events of 4 KB.
struct paced_reader {
  static constexpr std::size_t budget = 64 * 1024;

  paced_reader(test::store_fixture& f, int count, std::uint32_t max_reply_reading_ms = 0) {
    config.set("logger.verbosity", caf::atom("quiet"));
    system.emplace(config);
    metrics = std::make_shared<relay_metrics>();
    reader_args args;
    args.database_url = f.database.conninfo();
    args.metrics = metrics;
    args.max_history_bytes = budget;
    args.statement_timeout_ms = 1000;
    args.max_reply_reading_ms = max_reply_reading_ms;
    args.waits = std::make_shared<reader_waits>(2);
    test::author alice{21};
    for (int i = 0; i < count; ++i)
      REQUIRE(test::store_one(f.events, f.community, alice.sign(1, 1'700'000'000 - i, {}, std::string(4000, 'x'))).result
              == storage::store_outcome::status::stored);
    reader = system->spawn<caf::detached>(storage_reader, args);
  }
  ~paced_reader() { caf::anon_send_exit(reader, caf::exit_reason::user_shutdown); }

  /// The reply's end (its last part) and how long it took to come. What the reader sends stays
  /// counted in `flow` (unread) unless the test reads it.
  std::pair<storage::query_result, std::chrono::steady_clock::duration>
  ask(std::int64_t community, std::shared_ptr<history_flow> flow) {
    caf::scoped_actor self{*system};
    protocol::filter notes;
    notes.kinds = {1};
    auto started = std::chrono::steady_clock::now();
    self->send(reader, query_atom_v, history_request{self, community, "s", 1, {notes}, flow, {}});
    storage::query_result last;
    bool waiting = true;
    while (waiting)
      self->receive(
        [&](history_atom, const std::string&, std::uint64_t, storage::query_result& part) {
          if (part.last) {
            last = std::move(part);
            waiting = false;
          }
        },
        caf::after(std::chrono::seconds(30)) >> [&] { waiting = false; });
    return {std::move(last), std::chrono::steady_clock::now() - started};
  }

  caf::actor_system_config config;
  std::optional<caf::actor_system> system;
  std::shared_ptr<relay_metrics> metrics;
  caf::actor reader;
};

} // namespace

TEST_CASE_METHOD(test::store_fixture, "a reader drops, unread, the queries of a connection that has closed",
                 "[integration][reader]") {
  caf::actor_system_config config;
  config.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{config};
  auto metrics = std::make_shared<relay_metrics>();
  reader_args args;
  args.database_url = database.conninfo();
  args.metrics = metrics;
  args.waits = std::make_shared<reader_waits>(1);
  auto reader = system.spawn<caf::detached>(storage_reader, args);
  boost::asio::io_context io;
  auto flow_of = [&](bool closed) {
    auto outbox = std::make_shared<websocket_outbox>(boost::asio::make_strand(io), 1 << 20, metrics);
    if (closed)
      outbox->close(close_reason::going_away);
    auto flow = std::make_shared<history_flow>();
    flow->sink = outbox;
    return flow;
  };
  protocol::filter notes;
  notes.kinds = {1};
  caf::scoped_actor self{system};
  for (int i = 0; i < 3; ++i)
    args.waits->queued(0); // as pick_reader counts each query it sends
  auto gone = flow_of(true);
  self->send(reader, query_atom_v, history_request{self, community, "left", 1, {notes}, gone, {}});
  self->send(reader, count_atom_v, history_request{self, community, "left too", 2, {notes}, gone, {}});
  self->send(reader, count_atom_v, history_request{self, community, "here", 3, {notes}, flow_of(false), {}});
  std::vector<std::string> answered;
  bool waiting = true;
  while (waiting)
    self->receive(
      [&](history_atom, const std::string& sub, std::uint64_t, const storage::query_result&) {
        answered.push_back(sub);
      },
      [&](counted_atom, const std::string& sub, std::uint64_t, const storage::count_result& result) {
        answered.push_back(sub);
        CHECK(result.ok);
        waiting = false;
      },
      caf::after(std::chrono::seconds(10)) >> [&] { waiting = false; });
  CHECK(answered == std::vector<std::string>{"here"});
  CHECK(metrics->queries_skipped.load() == 2);
  // Skipped queries are answered too (the last is counted off just after its reply is sent).
  for (int i = 0; i < 100 && args.waits->queued_total() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(args.waits->queued_total() == 0);
  self->send_exit(reader, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(test::store_fixture, "a query's database time is charged to its client address",
                 "[integration][reader][bounds]") {
  // A REQ or COUNT costs one frame token whatever its SQL: a filter Postgres answers by walking
  // a whole community would otherwise keep the readers busy for free. Here the statement waits
  // on a lock for 300 ms, past the address's 100 ms of database time.
  caf::actor_system_config config;
  caf::actor_system system{config};
  auto metrics = std::make_shared<relay_metrics>();
  reader_args args;
  args.database_url = database.conninfo();
  args.metrics = metrics;
  auto reader = system.spawn<caf::detached>(storage_reader, args);
  ip_limits limits;
  limits.database_ms_rate = 0.001;
  limits.database_ms_burst = 100;
  auto address = std::make_shared<ip_budget>(limits);
  auto flow = std::make_shared<history_flow>();
  flow->address = address;
  protocol::filter notes;
  notes.kinds = {1};
  storage::pg_connection locker(database.conninfo());
  REQUIRE(locker.exec("BEGIN").ok());
  REQUIRE(locker.exec("LOCK TABLE events IN ACCESS EXCLUSIVE MODE").ok());
  caf::scoped_actor self{system};
  self->send(reader, count_atom_v, history_request{self, community, "slow", 1, {notes}, flow, {}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(locker.exec("COMMIT").ok());
  bool counted = false;
  self->receive([&](counted_atom, const std::string&, std::uint64_t, const storage::count_result& result) {
                  counted = result.ok;
                },
                caf::after(std::chrono::seconds(10)) >> [] {});
  CHECK(counted);
  CHECK(metrics->database_ms_charged.load() >= 250);
  CHECK(address->database_in_debt(monotonic_seconds()));
  // A query it queued before its debt came back is not run either.
  self->send(reader, count_atom_v, history_request{self, community, "queued", 2, {notes}, flow, {}});
  std::string refused;
  self->receive([&](counted_atom, const std::string&, std::uint64_t, const storage::count_result& result) {
                  refused = result.error;
                },
                caf::after(std::chrono::seconds(10)) >> [] {});
  CHECK(refused.starts_with("rate-limited: the queries from your address"));
  CHECK(metrics->queries_refused_address_debt.load() == 1);
  self->send_exit(reader, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(test::store_fixture,
                 "a reply is refused at once, holding no reader, while its connection has too much unread for its first chunk",
                 "[integration][reader]") {
  paced_reader r(*this, 4);
  auto flow = std::make_shared<history_flow>();
  // Earlier replies, not read: as far as a reader fills a budget, one chunk short of it.
  flow->in_mailbox = paced_reader::budget - 4096;
  auto last = r.ask(community, flow).first;
  CHECK_FALSE(last.ok);
  CHECK(last.error == "error: history reply refused: earlier replies are still unread");
  CHECK(r.metrics->history_waits.load() == 0); // it took no wait slot, and waited for nothing
  CHECK(r.metrics->history_abandoned.load() == 1);
}

TEST_CASE_METHOD(test::store_fixture,
                 "a reply waits for a client that reads a little now and then three timeouts at most in all",
                 "[integration][reader]") {
  paced_reader r(*this, 40); // 160 KB: at 5 KB/s, half a minute
  auto flow = std::make_shared<history_flow>();
  flow->in_mailbox = paced_reader::budget - 5000; // the first chunk fits, the next waits
  std::atomic<bool> reading{true};
  std::jthread client([&] {
    // Some progress every 200 ms, well within the 1 s without progress a reply waits.
    while (reading) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::size_t held = flow->in_mailbox.load();
      if (held >= 1024)
        flow->in_mailbox.fetch_sub(1024);
    }
  });
  auto [last, took] = r.ask(community, flow);
  reading = false;
  CHECK_FALSE(last.ok);
  CHECK(last.error == "error: history reply abandoned: the client did not read it in time");
  CHECK(took < std::chrono::seconds(15)); // three 1 s timeouts and the reads; all of it took 35 s
  CHECK(r.metrics->history_abandoned.load() == 1);
}

TEST_CASE_METHOD(test::store_fixture, "a reply that takes longer to read than its deadline is abandoned",
                 "[integration][reader]") {
  SECTION("within the deadline (three statement timeouts), a reply of 200 events is read whole") {
    paced_reader r(*this, 200);
    auto last = r.ask(community, nullptr).first;
    CHECK(last.ok);
    CHECK(r.metrics->history_too_long.load() == 0);
  }
  SECTION("past it, the reply ends with CLOSED error:") {
    paced_reader r(*this, 200, 1);
    auto last = r.ask(community, nullptr).first;
    CHECK_FALSE(last.ok);
    CHECK(last.error == "error: history reply abandoned: it took too long to read; ask for less");
    CHECK(r.metrics->history_too_long.load() == 1);
  }
}

TEST_CASE_METHOD(test::store_fixture, "a reader stops reading for a subscription that ended",
                 "[integration][reader]") {
  paced_reader r(*this, 40); // 160 KB in chunks of one 4 KB event: past the 64 KB budget
  caf::scoped_actor self{*r.system};
  protocol::filter notes;
  notes.kinds = {1};
  // Closed before its query started: read not at all, answered only so its connection frees
  // the query's place (a connection has 8).
  auto closed = std::make_shared<std::atomic<bool>>(true);
  self->send(r.reader, query_atom_v, history_request{self, community, "closed", 1, {notes}, nullptr, {}, closed});
  // Closed while its reply waits for the client to read: the reader stops there.
  auto flow = std::make_shared<history_flow>();
  auto ended = std::make_shared<std::atomic<bool>>(false);
  self->send(r.reader, query_atom_v, history_request{self, community, "open", 2, {notes}, flow, {}, ended});
  std::vector<std::string> parts;
  storage::query_result closed_answer{true, {}, {}, false};
  bool waiting = true;
  while (waiting)
    self->receive(
      [&](history_atom, const std::string& sub, std::uint64_t, const storage::query_result& part) {
        parts.push_back(sub);
        if (sub == "closed")
          closed_answer = part;
        else if (part.last)
          waiting = false;
        else if (parts.size() == 3) { // the client closes it and reads what came
          ended->store(true);
          flow->in_mailbox = 0;
        }
      },
      caf::after(std::chrono::seconds(10)) >> [&] { waiting = false; });
  CHECK(std::ranges::count(parts, "closed") == 1);
  CHECK(closed_answer.last);
  CHECK_FALSE(closed_answer.ok);
  CHECK(closed_answer.events.empty());
  CHECK(closed_answer.shared.empty());
  CHECK(r.metrics->queries_skipped.load() == 1);
  REQUIRE_FALSE(parts.empty());
  CHECK(parts.size() < 20); // of 40 chunks; the budget lets about 16 go before the close
}

TEST_CASE_METHOD(test::store_fixture, "a reader stops reading for a connection that has closed, at its next chunk",
                 "[integration][reader]") {
  // A client that asks for a long history and hangs up reads nothing more: without the check,
  // the reader went on for it up to the whole history budget.
  paced_reader r(*this, 40); // 160 KB in chunks of one 4 KB event: past the 64 KB budget
  boost::asio::io_context io;
  auto outbox = std::make_shared<websocket_outbox>(boost::asio::make_strand(io), 1 << 20, r.metrics);
  auto flow = std::make_shared<history_flow>();
  flow->sink = outbox;
  caf::scoped_actor self{*r.system};
  protocol::filter notes;
  notes.kinds = {1};
  self->send(r.reader, query_atom_v, history_request{self, community, "s", 1, {notes}, flow, {}});
  int parts = 0;
  bool waiting = true;
  while (waiting)
    self->receive(
      [&](history_atom, const std::string&, std::uint64_t, const storage::query_result& part) {
        if (++parts == 2)
          outbox->close(close_reason::going_away); // the client hung up, having read nothing
        if (part.last)
          waiting = false;
      },
      caf::after(std::chrono::seconds(10)) >> [&] { waiting = false; });
  CHECK_FALSE(waiting);
  CHECK(parts < 6); // the budget let about 16 go
}
