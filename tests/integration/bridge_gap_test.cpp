// SPDX-License-Identifier: MIT
// The stored events a pod hands its subscribers after its bridge was cut (bridge_gap.cpp): those
// of one community created since a time, oldest first, bounded, never expired ones; and the gap
// filler that reads them for the bridge, or tells it Postgres did not answer.
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "actors/community/community_registry.hpp"
#include "actors/community/gap_filler.hpp"
#include "storage/access_state.hpp"
#include "storage/bridge_gap.hpp"
#include "support/actor_world.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::json_of;
using comb::test::scalar;
using comb::test::store_one;

namespace {

constexpr std::int64_t now = 1'700'000'000;

std::vector<std::string> raws_of(const storage::recent_events& found) {
  std::vector<std::string> out;
  for (const auto& stored : found.events)
    out.push_back(stored.raw);
  return out;
}

} // namespace

TEST_CASE_METHOD(test::store_fixture,
                 "the gap's events: stored since a time whatever their created_at, in the order"
                 " stored, bounded, unexpired",
                 "[integration][bridge]") {
  author alice{21};
  const auto clock = std::stoll(scalar(connection, "SELECT floor(extract(epoch FROM now()))"));
  auto before = alice.sign(1, now - 100);
  auto first = alice.sign(1, now - 30);
  auto old = alice.sign(1, now - 3600, {}, "created an hour before, stored in the gap");
  auto second = alice.sign(1, now - 20);
  auto expired = alice.sign(1, now - 10, {{"expiration", std::to_string(clock - 1)}});
  auto third = alice.sign(1, now - 5);
  for (const auto& ev : {before, first, old, second, expired, third})
    (void)store_one(events, community, ev);
  auto other = add_community("other.example");
  (void)store_one(events, other, alice.sign(1, now - 15, {}, "elsewhere"));
  // The writer's COPY leaves stored_at to its default: the storing transaction's time.
  CHECK(scalar(connection, "SELECT count(*) FROM events WHERE stored_at BETWEEN $1::bigint - 5"
                           " AND $1::bigint + 5", {std::to_string(clock)}) == "7");
  // Then each is placed in time: stored at T minus these seconds.
  const std::pair<test::event_ptr, int> stored[] = {
    {before, 100}, {first, 30}, {old, 25}, {second, 20}, {expired, 10}, {third, 5}};
  for (const auto& [ev, ago] : stored)
    scalar(connection, "UPDATE events SET stored_at = $1::bigint WHERE id = decode($2, 'hex')"
                       " RETURNING 1", {std::to_string(now - ago), test::hex(ev->id)});

  auto gap = storage::load_recent_events(connection, community, now - 30, clock, {10});
  REQUIRE(gap);
  CHECK_FALSE(gap->cut);
  CHECK(raws_of(*gap) == std::vector<std::string>{json_of(first), json_of(old), json_of(second),
                                                  json_of(third)});

  // Bounded, the newest are kept: the window reaches back before the loss, and what the gap
  // itself held is stored last.
  auto bounded = storage::load_recent_events(connection, community, now - 30, clock, {2});
  REQUIRE(bounded);
  CHECK(bounded->cut);
  CHECK(raws_of(*bounded) == std::vector<std::string>{json_of(second), json_of(third)});

  // Bounded in bytes as well: the newest that fit, the one that does not fit and all older left
  // out, though a smaller one further back would have fit.
  const auto third_bytes = static_cast<std::int64_t>(json_of(third).size());
  const auto second_bytes = static_cast<std::int64_t>(json_of(second).size());
  auto two = storage::load_recent_events(connection, community, now - 30, clock, {10, third_bytes + second_bytes});
  REQUIRE(two);
  CHECK(raws_of(*two) == std::vector<std::string>{json_of(second), json_of(third)});
  CHECK(two->bytes == third_bytes + second_bytes);
  CHECK(two->cut);
  auto one = storage::load_recent_events(connection, community, now - 30, clock, {10, third_bytes + second_bytes - 1});
  REQUIRE(one);
  CHECK(raws_of(*one) == std::vector<std::string>{json_of(third)});
  CHECK(one->cut);
  auto all = storage::load_recent_events(connection, community, now - 30, clock, {10, 1 << 20});
  REQUIRE(all);
  CHECK(raws_of(*all).size() == 4);
  CHECK_FALSE(all->cut);
}

TEST_CASE_METHOD(test::store_fixture, "the gap's events come with the rooms they were stored as borrowing",
                 "[integration][bridge][rooms]") {
  author alice{21};
  const auto clock = std::stoll(scalar(connection, "SELECT floor(extract(epoch FROM now()))"));
  auto edit = alice.sign(31923, clock, {{"d", "picnic"}}, "an edit that left its h out");
  auto plain = alice.sign(1, clock);
  for (const auto& ev : {edit, plain})
    (void)store_one(events, community, ev);
  for (const char* room : {"pizza", "pasta"})
    scalar(connection, "INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)"
                       " VALUES ($1::bigint, decode($2, 'hex'), 'room', $3, $4::bigint, 31923) RETURNING 1",
           {std::to_string(community), test::hex(edit->id), room, std::to_string(clock)});
  auto gap = storage::load_recent_events(connection, community, clock - 60, clock + 1, {10});
  REQUIRE(gap);
  REQUIRE(gap->events.size() == 2);
  for (const auto& stored : gap->events)
    CHECK(stored.borrowed_rooms
          == (stored.raw == json_of(edit) ? std::vector<std::string>{"pasta", "pizza"} : std::vector<std::string>{}));
}

TEST_CASE_METHOD(test::store_fixture, "the gap's events are found by the stored_at index",
                 "[integration][bridge]") {
  // 20,000 events of two communities, stored one every 8 s over a day; the gap asks for 100 s.
  for (const auto& id : {std::to_string(community), std::to_string(add_community("b.example"))})
    scalar(connection, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw,"
                       " stored_at) SELECT $1::bigint, int4send(g), '\\x02', g, 1, repeat('x', 300),"
                       " 1700000000 + g * 8 FROM generate_series(1, 10000) g RETURNING 1", {id});
  REQUIRE(connection.exec("ANALYZE events").ok());
  auto plan = connection.exec("EXPLAIN (COSTS OFF) SELECT raw FROM events WHERE community_id = 1"
                              " AND stored_at >= 1700079900 AND (expires_at IS NULL OR"
                              " expires_at > 1700080000) ORDER BY stored_at DESC, created_at DESC, id LIMIT 1000");
  REQUIRE(plan.ok());
  std::string text;
  for (int row = 0; row < plan.rows(); ++row)
    text += std::string(plan.text(row, 0)) + "\n";
  INFO(text);
  CHECK(text.find("events_stored") != std::string::npos);
}

TEST_CASE_METHOD(test::store_fixture,
                 "the gap filler hands the bridge what was stored, and says so when Postgres did not"
                 " answer",
                 "[integration][bridge]") {
  author alice{22};
  auto stored = alice.sign(1, now, {}, "stored while the link was down");
  (void)store_one(events, community, stored);
  const auto lost_at_ms = std::stoll(scalar(connection, "SELECT floor(extract(epoch FROM now()))")) * 1000;

  test::actor_world world;
  REQUIRE(world.registry->ensure(community, [&] { return storage::load_access(connection, community); }));
  caf::scoped_actor bridge{*world.system};
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto fill_from = [&](const std::string& conninfo) {
    auto filler = world.spawn_detached(actors::gap_filler,
                                       actors::gap_filler_args{conninfo, world.registry, bridge, metrics});
    caf::anon_send(filler, actors::ready_atom_v, lost_at_ms);
    return filler;
  };

  (void)fill_from(database.conninfo());
  std::vector<std::string> handed;
  std::int64_t lost_at_handed = 0;
  bridge->receive([&](actors::gap_atom, const actors::committed_event& committed, std::int64_t,
                      std::int64_t lost_at) {
                    handed.push_back(committed.event.ev->content);
                    lost_at_handed = lost_at;
                  },
                  caf::after(std::chrono::seconds(10)) >> [] {});
  CHECK(handed == std::vector<std::string>{"stored while the link was down"});
  CHECK(lost_at_handed == lost_at_ms); // a fill of it again reaches as far back
  // Counted once the fill ends, just after what it handed on.
  for (int i = 0; i < 200 && metrics->bridge_gap_fill_events.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(metrics->bridge_gap_fill_events.load() == 1);
  CHECK(metrics->bridge_gap_fill_bytes.load() == json_of(stored).size());
  CHECK(metrics->bridge_gap_fills_cut.load() == 0);

  (void)fill_from("host=127.0.0.1 port=1 dbname=none user=none connect_timeout=2");
  std::int64_t asked_again = 0;
  bridge->receive([&](actors::unfilled_atom, std::int64_t since) { asked_again = since; },
                  caf::after(std::chrono::seconds(10)) >> [] {});
  CHECK(asked_again == lost_at_ms);
}

TEST_CASE_METHOD(test::store_fixture, "a fill reaches back by the database's clock when the pod's is off",
                 "[integration][bridge]") {
  author alice{25};
  (void)store_one(events, community, alice.sign(1, now, {}, "stored by the database's clock"));
  const auto database_ms = std::stoll(scalar(connection, "SELECT floor(extract(epoch FROM now()))")) * 1000;
  test::actor_world world;
  REQUIRE(world.registry->ensure(community, [&] { return storage::load_access(connection, community); }));
  caf::scoped_actor bridge{*world.system};
  auto metrics = std::make_shared<actors::relay_metrics>();
  // This pod's clock is two minutes ahead of the database's, as its access watcher measured.
  metrics->database_clock_offset_ms.store(-120'000);
  metrics->database_clock_known.store(true);
  auto filler = world.spawn_detached(actors::gap_filler,
                                     actors::gap_filler_args{database.conninfo(), world.registry, bridge, metrics});
  caf::anon_send(filler, actors::ready_atom_v, database_ms + 120'000); // the loss, by the pod's clock
  std::vector<std::string> handed;
  bridge->receive([&](actors::gap_atom, const actors::committed_event& committed, std::int64_t,
                      std::int64_t) { handed.push_back(committed.event.ev->content); },
                  caf::after(std::chrono::seconds(10)) >> [] {});
  CHECK(handed == std::vector<std::string>{"stored by the database's clock"});
}

TEST_CASE_METHOD(test::store_fixture, "a fill reads at most its bytes over every community, and counts the cut",
                 "[integration][bridge]") {
  author alice{24};
  auto other = add_community("other.example");
  const auto clock = std::stoll(scalar(connection, "SELECT floor(extract(epoch FROM now()))"));
  std::vector<test::event_ptr> stored;
  for (auto id : {community, other})
    for (int i = 0; i < 3; ++i) {
      stored.push_back(alice.sign(1, clock - 3 + i, {}, std::string(1000, char('a' + i))));
      (void)store_one(events, id, stored.back());
    }
  test::actor_world world;
  for (auto id : {community, other})
    REQUIRE(world.registry->ensure(id, [&] { return storage::load_access(connection, id); }));
  caf::scoped_actor bridge{*world.system};
  auto metrics = std::make_shared<actors::relay_metrics>();
  // Room for four of the six events: one community's three, and the newest of the next.
  const auto event_bytes = static_cast<std::int64_t>(json_of(stored.front()).size());
  actors::gap_filler_args args{database.conninfo(), world.registry, bridge, metrics};
  args.budget.bytes = 4 * event_bytes + event_bytes / 2;
  auto filler = world.spawn_detached(actors::gap_filler, args);
  caf::anon_send(filler, actors::ready_atom_v, clock * 1000);
  std::map<std::int64_t, int> handed;
  bool more = true;
  while (more)
    bridge->receive([&](actors::gap_atom, const actors::committed_event& committed, std::int64_t,
                        std::int64_t) { ++handed[committed.community_id]; },
                    caf::after(std::chrono::seconds(2)) >> [&] { more = false; });
  CHECK(handed.size() == 2);
  CHECK(handed[community] + handed[other] == 4);
  CHECK(std::max(handed[community], handed[other]) == 3);
  CHECK(metrics->bridge_gap_fill_events.load() == 4);
  CHECK(metrics->bridge_gap_fill_bytes.load() == static_cast<std::uint64_t>(4 * event_bytes));
  CHECK(metrics->bridge_gap_fills_cut.load() == 1);
}

TEST_CASE_METHOD(test::store_fixture,
                 "asks for fills that come while one runs make one fill after it, from the earliest",
                 "[integration][bridge]") {
  author alice{23};
  (void)store_one(events, community, alice.sign(1, now, {}, "stored while the link was down"));
  const auto lost_at_ms = std::stoll(scalar(connection, "SELECT floor(extract(epoch FROM now()))")) * 1000;

  test::actor_world world;
  REQUIRE(world.registry->ensure(community, [&] { return storage::load_access(connection, community); }));
  caf::scoped_actor bridge{*world.system};
  auto filler = world.spawn_detached(actors::gap_filler,
                                     actors::gap_filler_args{database.conninfo(), world.registry, bridge, nullptr});

  // The first fill blocks on the events table while four more asks arrive (Redis dropping the
  // pod's subscription again and again).
  storage::pg_connection holder(database.conninfo());
  REQUIRE(holder.exec("BEGIN").ok());
  REQUIRE(holder.exec("LOCK TABLE events IN ACCESS EXCLUSIVE MODE").ok());
  caf::anon_send(filler, actors::ready_atom_v, lost_at_ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (std::int64_t later : {4000, 1000, 3000, 2000})
    caf::anon_send(filler, actors::ready_atom_v, lost_at_ms + later);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(holder.exec("COMMIT").ok());

  std::vector<std::int64_t> fills_from;
  bool more = true;
  while (more)
    bridge->receive([&](actors::gap_atom, const actors::committed_event&, std::int64_t,
                        std::int64_t lost_at) { fills_from.push_back(lost_at); },
                    caf::after(std::chrono::seconds(2)) >> [&] { more = false; });
  CHECK(fills_from == std::vector<std::int64_t>{lost_at_ms, lost_at_ms + 1000});
}
