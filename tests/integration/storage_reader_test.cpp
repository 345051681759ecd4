// SPDX-License-Identifier: MIT
// A storage reader actor against a real Postgres: what it reads for whom.
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <thread>

#include "actors/gateway/websocket_outbox.hpp"
#include "actors/messages.hpp"
#include "actors/storage/storage_actors.hpp"
#include "support/pg_test_database.hpp"

using namespace comb;
using namespace comb::actors;

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
