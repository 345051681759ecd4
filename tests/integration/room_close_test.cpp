// SPDX-License-Identifier: MIT
// Closing a community: in a closed community only its members are in rooms, so the switch
// removes everyone else from every room in its own transaction, with the rooms' new state.
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "storage/community_store.hpp"
#include "storage/store_plan.hpp"
#include "support/room_fixture.hpp"

using namespace comb;
using namespace comb::test;
using storage::lifecycle_result;
using storage::member_role;
using storage::membership_change;

namespace {

struct closing_fixture : room_fixture {
  /// Alice is a community member; bob joined room "pizza" and carol was made its moderator
  /// while the community was open, so neither is a community member. Room "pasta" holds only
  /// community members.
  closing_fixture() {
    REQUIRE(apply(command(membership_change::add_member, alice.pubkey())).committed);
    open_room("pasta");
    open_room();
    REQUIRE(run(alice, 9021, {}).outcome == protocol::room_outcome::changed);
    REQUIRE(run(bob, 9021, {}).outcome == protocol::room_outcome::changed);
    REQUIRE(run(owner, 9000, {{"p", carol.pubkey_hex(), "moderator"}}).committed);
  }

  storage::access_switch set_access(bool closed, std::int64_t at) {
    return communities.set_access(community, closed, relay_key, at);
  }

  std::string access() { return count("SELECT access FROM communities WHERE id = $1::bigint"); }
  std::string version() {
    return count("SELECT state_version FROM communities WHERE id = $1::bigint");
  }
  std::string room_rows() {
    return count("SELECT count(*) FROM room_members WHERE community_id = $1::bigint");
  }
  std::string state_of(const char* room) {
    storage::pg_connection reader(database.conninfo());
    return scalar(reader,
                  "SELECT string_agg(encode(id, 'hex'), ',' ORDER BY kind) FROM events"
                  " WHERE community_id = $1::bigint AND d_tag = $2 AND kind BETWEEN 39000 AND 39005",
                  {std::to_string(community), room});
  }
};

} // namespace

TEST_CASE_METHOD(closing_fixture, "closing removes every non-member from the rooms in its transaction",
                 "[integration][rooms]") {
  auto version_before = std::stoll(version());
  auto pasta_before = state_of("pasta");
  CHECK(room_rows() == "5"); // pizza: owner, alice, bob, carol; pasta: owner

  // pizza's state already has this second: the close does not wait for the next (a busy room
  // takes each second as it begins), it signs pizza's state one second ahead.
  REQUIRE(count("SELECT newest_state_at FROM room_clocks WHERE community_id = $1::bigint"
                " AND room_id = 'pizza'") == std::to_string(now));
  auto closed = set_access(true, now);
  INFO(communities.last_error());
  REQUIRE(closed.result == lifecycle_result::changed);
  CHECK(closed.retry_at == 0);
  CHECK(access() == "closed");
  ++now;
  // pizza: 39001 (carol held a role) and 39002, at the paced second; pasta is untouched.
  std::multiset<std::uint32_t> kinds;
  for (const auto& ev : closed.room_events) {
    kinds.insert(ev.ev.kind);
    CHECK(protocol::d_tag(ev.ev) == "pizza");
    CHECK(ev.ev.created_at == now);
    CHECK(ev.ev.pubkey == signer(community).public_key());
  }
  CHECK(kinds == std::multiset<std::uint32_t>{39001, 39002});
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex(), alice.pubkey_hex()});
  CHECK(room_rows() == "3");
  CHECK(state_of("pasta") == pasta_before);
  CHECK(count("SELECT newest_state_at FROM room_clocks WHERE community_id = $1::bigint"
              " AND room_id = 'pizza'")
        == std::to_string(now));
  // One transaction: the flag and the rooms' state under one version, which every event the
  // close wrote is recorded under.
  auto closed_at = std::stoll(version());
  CHECK(closed_at > version_before);
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint AND version = "
              + std::to_string(closed_at))
        == std::to_string(closed.room_events.size()));
  auto admins = count("SELECT raw FROM events WHERE community_id = $1::bigint AND kind = 39001"
                      " AND d_tag = 'pizza'");
  CHECK(admins.find(carol.pubkey_hex()) == std::string::npos);

  // A closed community's rooms refuse outsiders from now on (the room rule), and closing again
  // is a conflict that writes nothing.
  auto again = set_access(true, now + 1);
  CHECK(again.result == lifecycle_result::unchanged);
  CHECK(again.room_events.empty());
  CHECK(std::stoll(version()) == closed_at);
}

TEST_CASE_METHOD(closing_fixture, "closing when every room member is a community member writes no room state",
                 "[integration][rooms]") {
  REQUIRE(run(owner, 9001, {{"p", bob.pubkey_hex()}}).committed);
  REQUIRE(run(owner, 9001, {{"p", carol.pubkey_hex()}}).committed);
  auto pizza_before = state_of("pizza");
  auto closed = set_access(true, now); // pizza's clock is at `now`, but nothing is rewritten
  REQUIRE(closed.result == lifecycle_result::changed);
  CHECK(closed.room_events.empty());
  CHECK(state_of("pizza") == pizza_before);
  CHECK(room_rows() == "3");
  // Opening never touches the rooms.
  auto opened = set_access(false, now);
  REQUIRE(opened.result == lifecycle_result::changed);
  CHECK(opened.room_events.empty());
  CHECK(state_of("pizza") == pizza_before);
}

TEST_CASE_METHOD(closing_fixture, "a failed close rolls back the flag and the rooms together",
                 "[integration][rooms]") {
  auto version_before = version();
  auto pizza_before = state_of("pizza");
  storage::pg_connection holder(database.conninfo());
  REQUIRE(holder.exec("BEGIN").ok());
  REQUIRE(holder.exec("LOCK TABLE room_clocks IN ACCESS EXCLUSIVE MODE").ok());
  REQUIRE_FALSE(connection.ensure_connected());
  storage::access_switch closed;
  // The flag is written before the rooms are read: the close blocks after it.
  std::thread writer([&] { closed = set_access(true, now + 5); });
  storage::pg_connection observer(database.conninfo());
  bool blocked = blocked_on_lock(observer, connection.backend_pid());
  connection.cancel();
  writer.join();
  (void)holder.exec("ROLLBACK");
  REQUIRE(blocked);
  CHECK(closed.result == lifecycle_result::failed);
  CHECK_FALSE(communities.last_error().empty());
  CHECK(closed.room_events.empty());
  CHECK(access() == "open");
  CHECK(room_rows() == "5");
  CHECK(state_of("pizza") == pizza_before);
  CHECK(version() == version_before);
  // Nothing half-done is left: the same close then succeeds in full.
  auto retried = set_access(true, now + 5);
  REQUIRE(retried.result == lifecycle_result::changed);
  CHECK(room_rows() == "3");
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex(), alice.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "a room change that takes posting away waits for the event batches in flight",
                 "[integration][rooms][race]") {
  // A batch in flight read the room's writers under the community's event lock, held shared to
  // its commit: a change committed before that commit would let in a post by whoever it took
  // posting from. It waits for the batch, and the batches after it read it.
  REQUIRE(apply(command(membership_change::add_member, alice.pubkey())).committed);
  open_room();
  REQUIRE(run(alice, 9021, {}).outcome == protocol::room_outcome::changed);
  auto waits_for_a_batch = [&](const std::function<void()>& change) {
    return waits_for_event_batch(database.conninfo(), connection, community, change);
  };
  storage::room_write restricted;
  CHECK(waits_for_a_batch([&] { restricted = run(owner, 9002, {{"name", "pizza"}, {"restricted"}}); }));
  CHECK(restricted.outcome == protocol::room_outcome::changed);
  storage::room_write removed;
  CHECK(waits_for_a_batch([&] { removed = run(owner, 9001, {{"p", alice.pubkey_hex()}}); }));
  CHECK(removed.outcome == protocol::room_outcome::changed);
}

TEST_CASE_METHOD(room_fixture, "a community removal or an admin's demotion waits for the event batches in flight",
                 "[integration][rooms][race]") {
  // In an open community too: whoever leaves it leaves its restricted rooms, and an admin posts
  // in every restricted room. A batch in flight read them as posters under the community's event
  // lock; the change waits for its commit, and the batches after it read the change.
  REQUIRE(apply(command(membership_change::add_member, alice.pubkey())).committed);
  REQUIRE(apply(command(membership_change::add_member, bob.pubkey())).committed);
  REQUIRE(apply(command(membership_change::update_role, bob.pubkey(), member_role::admin)).committed);
  open_room();
  REQUIRE(run(alice, 9021, {}).outcome == protocol::room_outcome::changed);
  REQUIRE(run(owner, 9002, {{"name", "pizza"}, {"restricted"}}).outcome == protocol::room_outcome::changed);
  auto waits_for_a_batch = [&](const std::function<void()>& change) {
    return waits_for_event_batch(database.conninfo(), connection, community, change);
  };
  storage::membership_write removed, demoted;
  CHECK(waits_for_a_batch([&] { removed = apply(command(membership_change::remove_member, alice.pubkey())); }));
  REQUIRE(removed.committed);
  CHECK(waits_for_a_batch(
    [&] { demoted = apply(command(membership_change::update_role, bob.pubkey(), member_role::member)); }));
  REQUIRE(demoted.committed);
  auto post = [&](author& who) {
    auto write = write_of(community, who.sign(9, now, {{"h", "pizza"}}, "after the change"));
    write.rooms = {"pizza"}; // as the pod admitted it before it heard of the change
    return events.store_batch(std::vector{write}).at(0);
  };
  check_outcome(post(alice), storage::store_outcome::status::refused, storage::msg_room_restricted);
  check_outcome(post(bob), storage::store_outcome::status::refused, storage::msg_room_restricted);
}

TEST_CASE_METHOD(closing_fixture, "a republish after hand edits takes out of the rooms whoever the edits took out of the community",
                 "[integration][rooms]") {
  // psql: alice removed and bob banned by hand. Every pod follows at once (a trigger bumps the
  // version), but their rooms kept them, and alice could still post in restricted ones.
  const std::string id = std::to_string(community);
  (void)scalar(connection, "DELETE FROM members WHERE community_id = $1::bigint AND pubkey = decode($2, 'hex') RETURNING 1",
               {id, alice.pubkey_hex()});
  (void)scalar(connection, "INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, decode($2, 'hex')) RETURNING 1",
               {id, bob.pubkey_hex()});
  REQUIRE(room_rows() == "5");
  auto republished = apply(command(membership_change::republish, protocol::bytes32{}));
  INFO(members.last_error());
  REQUIRE(republished.committed);
  // Carol, in pizza while the community is open and never a member of it, stays.
  CHECK(room_rows() == "3");
  auto listed = listed_members();
  CHECK(std::find(listed.begin(), listed.end(), alice.pubkey_hex()) == listed.end());
  CHECK(std::find(listed.begin(), listed.end(), bob.pubkey_hex()) == listed.end());
  CHECK(std::find(listed.begin(), listed.end(), carol.pubkey_hex()) != listed.end());
  CHECK_FALSE(republished.room_events.empty());
}
