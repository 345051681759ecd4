// SPDX-License-Identifier: MIT
// Membership writers racing each other and a held lock, on a real Postgres.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "storage/event_rows.hpp"
#include "storage/member_list.hpp"
#include "storage/pg_connection.hpp"
#include "storage/store_plan.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::member_role;
using storage::membership_change;
using outcome = storage::membership_outcome;

namespace {

std::string list_lock_key(const membership_fixture& f) {
  storage::address list{f.community, f.signer(f.community).public_key(), storage::member_list_kind, ""};
  return std::to_string(storage::address_lock_key(list));
}

} // namespace

TEST_CASE_METHOD(membership_fixture, "a failed list write rolls the membership change back",
                 "[integration][membership][race]") {
  auto before = apply(command(membership_change::provision_owner, author(1).pubkey(), member_role::owner));
  REQUIRE(before.list);
  storage::pg_connection holder(database.conninfo());
  storage::pg_connection observer(database.conninfo());
  REQUIRE(scalar(holder, "SELECT pg_advisory_lock($1::bigint)::text", {list_lock_key(*this)}) == "");

  REQUIRE_FALSE(connection.ensure_connected());
  int joiner_pid = connection.backend_pid();
  storage::membership_write joined;
  std::thread join([&] { joined = apply(command(membership_change::add_member, author(2).pubkey())); });
  bool blocked = blocked_on_lock(observer, joiner_pid);
  connection.cancel();
  join.join();
  REQUIRE(blocked);

  CHECK_FALSE(joined.committed);
  CHECK(joined.results.at(0).outcome == outcome::failed);
  CHECK(stored_members(community)
        == std::set<std::pair<std::string, std::string>>{{author(1).pubkey_hex(), "owner"}});
  auto lists = live_lists(community);
  REQUIRE(lists.size() == 1);
  CHECK(lists[0] == *before.list);
  (void)scalar(holder, "SELECT pg_advisory_unlock($1::bigint)::text", {list_lock_key(*this)});
  // And the next change goes through on the same connection.
  CHECK(apply(command(membership_change::add_member, author(2).pubkey())).committed);
}

TEST_CASE_METHOD(membership_fixture, "concurrent joins on separate connections all land in the list",
                 "[integration][membership][race]") {
  REQUIRE(apply(command(membership_change::provision_owner, author(1).pubkey(), member_role::owner)).committed);
  std::vector<std::thread> joiners;
  std::atomic<int> committed{0};
  for (std::uint8_t i = 0; i < 8; ++i)
    joiners.emplace_back([&, i] {
      storage::pg_connection own(database.conninfo());
      storage::membership_store store(own, relay_key);
      auto c = command(membership_change::claim_membership, author(static_cast<std::uint8_t>(20 + i)).pubkey());
      if (paced(store, community, std::span(&c, 1)).committed)
        ++committed;
    });
  for (auto& t : joiners)
    t.join();
  CHECK(committed == 8);
  auto lists = live_lists(community);
  REQUIRE(lists.size() == 1);
  CHECK(listed(lists[0]).size() == 9);
  CHECK(listed(lists[0]) == stored_members(community));
}

TEST_CASE_METHOD(membership_fixture, "owner transfer waits behind a held repair, then both commit",
                 "[integration][membership][race]") {
  REQUIRE(apply(command(membership_change::provision_owner, author(1).pubkey(), member_role::owner)).committed);
  REQUIRE(apply(command(membership_change::add_member, author(2).pubkey())).committed);
  // A repair in progress holds what a list write holds: the community row, the list lock, and
  // an event insert's key-share lock on the community.
  storage::pg_connection repair(database.conninfo());
  storage::pg_connection observer(database.conninfo());
  (void)scalar(repair, "BEGIN");
  (void)scalar(repair, "SELECT id::text FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE",
               {std::to_string(community)});
  (void)scalar(repair, "SELECT pg_advisory_xact_lock($1::bigint)::text", {list_lock_key(*this)});
  auto probe = author(3).sign(1, now_seconds());
  (void)scalar(repair, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
                       " VALUES ($1::bigint, $2::bytea, $3::bytea, 1, 1, '{}')",
               {std::to_string(community), "\\x" + protocol::to_hex(probe->id),
                "\\x" + protocol::to_hex(probe->pubkey)});

  REQUIRE_FALSE(connection.ensure_connected());
  int transfer_pid = connection.backend_pid();
  storage::membership_write transferred;
  std::thread transfer([&] {
    transferred = apply(command(membership_change::transfer_owner, author(2).pubkey(), member_role::owner));
  });
  bool blocked = blocked_on_lock(observer, transfer_pid);
  (void)scalar(repair, "COMMIT");
  transfer.join();
  REQUIRE(blocked);
  CHECK(transferred.committed);
  CHECK(transferred.results[0].outcome == outcome::changed);
  CHECK(members.verify(community).matches);
}

TEST_CASE_METHOD(membership_fixture, "transfers, repairs and removals racing all commit",
                 "[integration][membership][race]") {
  REQUIRE(apply(command(membership_change::provision_owner, author(1).pubkey(), member_role::owner)).committed);
  for (std::uint8_t i = 2; i < 12; ++i)
    REQUIRE(apply(command(membership_change::add_member, author(i).pubkey())).committed);
  std::atomic<int> failures{0};
  auto run = [&](auto make_command, int rounds) {
    storage::pg_connection own(database.conninfo());
    storage::membership_store store(own, relay_key);
    for (int r = 0; r < rounds; ++r) {
      auto c = make_command(r);
      if (!paced(store, community, std::span(&c, 1)).committed)
        ++failures;
    }
  };
  std::thread transfers(run, [](int r) {
    return command(membership_change::transfer_owner, author(static_cast<std::uint8_t>(r % 2 ? 1 : 2)).pubkey(), member_role::owner);
  }, 20);
  std::thread repairs(run, [](int) { return command(membership_change::republish, protocol::bytes32{}); }, 20);
  std::thread removals(run, [](int r) {
    return command(membership_change::remove_member, author(static_cast<std::uint8_t>(3 + r % 9)).pubkey());
  }, 20);
  transfers.join();
  repairs.join();
  removals.join();
  CHECK(failures == 0);
  CHECK(live_lists(community).size() == 1);
  CHECK(members.verify(community).matches);
}

TEST_CASE_METHOD(membership_fixture, "a membership write behind a lock held elsewhere fails within the lock timeout",
                 "[integration][membership][race][timeouts]") {
  REQUIRE(apply(command(membership_change::provision_owner, author(1).pubkey(), member_role::owner)).committed);
  // A psql session left open on the community's row: the pod's one membership writer, which
  // serves every community, answers an error rather than wait as long as the session lasts.
  storage::pg_connection psql(database.conninfo());
  (void)scalar(psql, "BEGIN");
  (void)scalar(psql, "SELECT id::text FROM communities WHERE id = $1::bigint FOR UPDATE", {std::to_string(community)});
  storage::pg_reconnect_policy quick;
  quick.lock_timeout_ms = 300;
  storage::pg_connection writer(database.conninfo(), quick);
  storage::membership_store store(writer, relay_key);
  auto add = command(membership_change::add_member, author(2).pubkey());
  auto start = std::chrono::steady_clock::now();
  auto blocked = store.apply(community, std::span(&add, 1), now_seconds());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK_FALSE(blocked.committed);
  REQUIRE(blocked.results.size() == 1);
  CHECK(blocked.results[0].outcome == outcome::failed);
  (void)scalar(psql, "ROLLBACK");
  auto applied = store.apply(community, std::span(&add, 1), now_seconds() + 1);
  CHECK(applied.committed);
  CHECK(members.verify(community).matches);
}

TEST_CASE_METHOD(membership_fixture, "a removal from a closed community waits for the event batches in flight",
                 "[integration][membership][race]") {
  REQUIRE(apply(command(membership_change::provision_owner, author(1).pubkey(), member_role::owner)).committed);
  REQUIRE(apply(command(membership_change::add_member, author(2).pubkey())).committed);
  storage::pg_connection admin(database.conninfo());
  (void)scalar(admin, "UPDATE communities SET access = 'closed' WHERE id = $1::bigint RETURNING ''",
               {std::to_string(community)});
  // A batch in flight holds the community's event lock shared, from before its snapshot (which
  // read the member) to its commit: the removal waits for it, so the event it stores is
  // committed before the removal, never after it.
  storage::membership_write removed;
  REQUIRE(waits_for_event_batch(database.conninfo(), connection, community, [&] {
    removed = apply(command(membership_change::remove_member, author(2).pubkey()));
  }));
  REQUIRE(removed.committed);
  // A batch after it reads the removal.
  auto late = store_one(events, community, author(2).sign(1, now_seconds(), {}, "after the removal"));
  CHECK(late.result == storage::store_outcome::status::refused);
  CHECK(late.message == storage::msg_not_member);
}
