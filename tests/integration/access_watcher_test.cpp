// SPDX-License-Identifier: MIT
// The access watcher on its own: what it forgets, reloads and answers when changes reach it by
// another way than their notification, and how it paces reloads.
#include <atomic>
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "actors/community/access_watcher.hpp"
#include "actors/community/notice_inbox.hpp"
#include "storage/access_state.hpp"
#include "support/access_probes.hpp"
#include "support/actor_world.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::membership_change;

TEST_CASE_METHOD(membership_fixture,
                 "a pod forgets its cached host answers for changes it took without their notification",
                 "[integration][authority]") {
  // A host removed while the pod's LISTEN connection was down reaches it by the version check
  // or by the reload when LISTEN comes back: the answers cached for the host (kept past their
  // time while lookups queue) must go then too, not only on a notification.
  actor_world world;
  const std::string id = std::to_string(community);
  (void)scalar(connection, "INSERT INTO community_hosts (host, community_id) VALUES ('alias.example', $1::bigint)"
                           " RETURNING 1", {id});
  auto forgotten = std::make_shared<std::atomic<int>>(0);
  world.registry->hooks()->set([](std::int64_t) {}, [](std::int64_t) {},
                               [forgotten, target = community](std::int64_t forgotten_id) {
                                 if (forgotten_id == target)
                                   ++*forgotten;
                               });
  auto handle = world.registry->ensure(community, [&] { return storage::load_access(connection, community); });
  REQUIRE(handle);
  auto watcher = world.spawn_detached(
    actors::access_watcher,
    actors::access_watcher_args{database.conninfo(), world.registry, world.idle, world.metrics,
                                std::chrono::milliseconds(50)});
  auto eventually = [](auto probe) {
    for (int i = 0; i < 300 && !probe(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return probe();
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // checks that find nothing new
  CHECK(forgotten->load() == 0);
  (void)scalar(connection, "DELETE FROM community_hosts WHERE host = 'alias.example' RETURNING 1");
  const auto removed_at = version_of(connection, community);
  CHECK(eventually([&] { return handle->members->whole_version() == removed_at; }));
  CHECK(forgotten->load() >= 1);
  const int before_reconnect = forgotten->load();
  caf::anon_send(watcher, actors::reload_atom_v); // as when LISTEN comes back
  CHECK(eventually([&] { return forgotten->load() > before_reconnect; }));
}

TEST_CASE_METHOD(membership_fixture, "the watcher tells the bridge when an origin claimed a version the database does not hold",
                 "[integration][authority]") {
  actor_world world;
  REQUIRE(world.registry->ensure(community, [&] { return storage::load_access(connection, community); }));
  auto watcher = world.spawn_detached(
    actors::access_watcher,
    actors::access_watcher_args{database.conninfo(), world.registry, world.idle, world.metrics,
                                std::chrono::seconds(60)});
  const auto stored = version_of(connection, community);
  caf::scoped_actor bridge{*world.system};
  std::optional<std::int64_t> told;
  std::int64_t asks = 0;
  auto ask = [&](std::int64_t claimed) {
    told.reset();
    bridge->send(watcher, actors::access_atom_v, community, claimed, ++asks);
    bridge->receive([&](actors::database_version_atom, std::int64_t about, std::int64_t version, std::int64_t answered) {
                      CHECK(about == community);
                      CHECK(answered == asks);
                      told = version;
                    },
                    caf::after(std::chrono::milliseconds(500)) >> [] {});
  };
  ask(stored + 1'000'000);
  CHECK(told == stored);
  ask(stored); // a true claim: nothing to say
  CHECK_FALSE(told);
}

TEST_CASE_METHOD(membership_fixture, "a reload of every community serves notifications between its turns",
                 "[integration][authority]") {
  // A pod serving many communities reloads all of them when its LISTEN connection comes back;
  // a change meanwhile must not wait for the whole pass (tens of seconds at thousands).
  actor_world world;
  constexpr int served = 200;
  std::vector<std::int64_t> ids;
  for (int i = 0; i < served; ++i)
    ids.push_back(std::stoll(scalar(connection, "INSERT INTO communities (host) VALUES ($1) RETURNING id",
                                    {"c" + std::to_string(i) + ".example"})));
  for (auto id : ids)
    REQUIRE(world.registry->ensure(id, [&] { return storage::load_access(connection, id); }));
  const auto changed = world.registry->community_ids().back(); // the pass's last
  auto handle = world.registry->find(changed);
  REQUIRE(handle);
  auto notices = std::make_shared<actors::notice_inbox>();
  auto watcher = world.spawn_detached(
    actors::access_watcher,
    actors::access_watcher_args{database.conninfo(), world.registry, world.idle, world.metrics,
                                std::chrono::seconds(60), notices});
  const auto newcomer = key_of(78);
  (void)scalar(connection, "INSERT INTO members (community_id, pubkey, role) VALUES ($1::bigint, '\\x"
                             + protocol::to_hex(newcomer) + "'::bytea, 'member') RETURNING 1",
               {std::to_string(changed)});
  const auto notice = std::to_string(changed) + " " + std::to_string(version_of(connection, changed));
  const auto before = world.metrics->access_reloads.load();
  caf::anon_send(watcher, actors::reload_atom_v);
  // The notification comes once the pass is under way.
  for (int i = 0; i < 5000 && world.metrics->access_reloads.load() - before < 3; ++i)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  REQUIRE(notices->add(notice));
  caf::anon_send(watcher, actors::notice_atom_v);
  std::uint64_t reloads_when_seen = 0;
  for (int i = 0; i < 10000 && !reloads_when_seen; ++i) {
    if (handle->members->is_member(newcomer))
      reloads_when_seen = world.metrics->access_reloads.load() - before;
    else
      std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  INFO("community states reloaded when the change was seen: " << reloads_when_seen);
  REQUIRE(reloads_when_seen > 0);
  CHECK(reloads_when_seen < served); // before the pass's end, not after it
  // The pass still takes every community again (the notification's own reload is not needed
  // when the pass took that community first).
  for (int i = 0; i < 1000 && world.metrics->access_reloads.load() - before < served; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(world.metrics->access_reloads.load() - before >= served);
}

TEST_CASE_METHOD(membership_fixture, "a burst of changes to one community is reloaded at most once per interval, the last one taken",
                 "[integration][authority]") {
  // A member joining and leaving rooms in a loop bumps the version as fast as the writers go;
  // without the interval, every pod would read the whole community again for each change.
  actor_world world;
  REQUIRE(world.registry->ensure(community, [&] { return storage::load_access(connection, community); }));
  auto handle = world.registry->find(community);
  REQUIRE(handle);
  auto notices = std::make_shared<actors::notice_inbox>();
  actors::access_watcher_args args{database.conninfo(), world.registry, world.idle, world.metrics,
                                   std::chrono::seconds(60), notices};
  args.min_reload_interval = std::chrono::milliseconds(1000);
  auto watcher = world.spawn_detached(actors::access_watcher, std::move(args));
  const auto before = world.metrics->access_reloads.load();
  constexpr int changes = 20;
  protocol::bytes32 last{};
  for (int i = 0; i < changes; ++i) {
    last = key_of(static_cast<std::uint8_t>(100 + i));
    (void)scalar(connection, "INSERT INTO members (community_id, pubkey, role) VALUES ($1::bigint, '\\x"
                               + protocol::to_hex(last) + "'::bytea, 'member') RETURNING 1",
                 {std::to_string(community)});
    if (notices->add(std::to_string(community) + " " + std::to_string(version_of(connection, community))))
      caf::anon_send(watcher, actors::notice_atom_v);
    std::this_thread::sleep_for(std::chrono::milliseconds(10)); // each notification its own wake-up
  }
  for (int i = 0; i < 400 && !handle->members->is_member(last); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(handle->members->is_member(last));
  const auto reloads = world.metrics->access_reloads.load() - before;
  INFO("reloads for " << changes << " changes: " << reloads);
  CHECK(reloads >= 2);
  CHECK(reloads <= 3); // the first at once, the rest at the end of the interval (or two)
  CHECK(world.metrics->access_reloads_deferred.load() >= 1);
}
