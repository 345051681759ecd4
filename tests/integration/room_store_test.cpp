// SPDX-License-Identifier: MIT
// NIP-29 rooms on a real Postgres: every write path writes exactly the room state it affects in
// its transaction, a failure rolls back, concurrent joins all land, community removal cascades.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "protocol/canonical_json.hpp"
#include "protocol/event_json.hpp"
#include "storage/event_rows.hpp"
#include "storage/pg_connection.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/room_store.hpp"
#include "storage/store_plan.hpp"
#include "support/room_fixture.hpp"
#include "support/test_events.hpp"
#include "../support/room_records.hpp"

using namespace comb;
using namespace comb::test;
using protocol::room_outcome;
using storage::member_role;
using storage::membership_change;

namespace {

std::vector<std::uint32_t> kinds_of(const storage::room_write& write) {
  std::vector<std::uint32_t> kinds;
  for (const auto& ev : write.events)
    kinds.push_back(ev.ev.kind);
  return kinds;
}

} // namespace

TEST_CASE_METHOD(room_fixture, "creating a room writes its four state events and the request",
                 "[integration][rooms]") {
  auto created = run(owner, 9007, {});
  REQUIRE(created.committed);
  CHECK(created.outcome == room_outcome::changed);
  CHECK(kinds_of(created) == std::vector<std::uint32_t>{9007, 39000, 39001, 39002, 39003});
  CHECK(created.state_version > 0);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind BETWEEN 39000 AND 39003") == "4");
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
  // The same request again is recognized; another create of the id is a no-op: neither writes.
  CHECK(run(owner, 9007, {}).outcome == room_outcome::already_processed);
  auto again = run(owner, 9007, {{"alt", "again"}});
  CHECK(again.outcome == room_outcome::room_exists);
  CHECK(again.events.empty());
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9007") == "1");
  // Locked until its first 9002, which apps send with the room's flags right after: nobody
  // watching for new 39000s joins, reads or posts in it before it becomes private or closed.
  CHECK(count("SELECT concat_ws(',', private, restricted, hidden, closed) FROM rooms WHERE community_id = $1::bigint")
        == "t,t,t,t");
  // Hidden too: to anyone outside it, a room that does not exist.
  CHECK(run(alice, 9021, {}).outcome == room_outcome::no_such_room);
  CHECK(run(alice, 9022, {}).outcome == room_outcome::not_member);
  REQUIRE(run(owner, 9002, {{"name", "Pizza"}}).outcome == room_outcome::changed);
  CHECK(count("SELECT concat_ws(',', private, restricted, hidden, closed) FROM rooms WHERE community_id = $1::bigint")
        == "f,f,f,f");
  CHECK(run(alice, 9021, {{"alt", "once it is open"}}).outcome == room_outcome::changed);
  // Members of the community who are not admins do not create rooms.
  auto by_member = paced_room(rooms, community, room_command(alice, 9007, {{"h", "other"}}, now), now);
  CHECK(by_member.outcome == room_outcome::not_allowed);
  CHECK(count("SELECT count(*) FROM rooms WHERE community_id = $1::bigint") == "1");
}

TEST_CASE_METHOD(room_fixture, "joins and leaves rewrite 39002 only, paced; the relay issues a 9000 for a join, a 9001 for a leave",
                 "[integration][rooms]") {
  open_room();
  std::int64_t created_second = now;
  auto joined = run(alice, 9021, {});
  CHECK(joined.outcome == room_outcome::changed);
  CHECK(kinds_of(joined) == std::vector<std::uint32_t>{9021, 39002, 9000});
  // The room's state of that second was written: the join moved to the next one.
  CHECK(joined.events.at(1).ev.created_at == created_second + 1);
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex(), alice.pubkey_hex()});
  auto twice = run(alice, 9021, {});
  CHECK(twice.outcome == room_outcome::already_member);
  CHECK(twice.events.empty());
  auto left = run(alice, 9022, {});
  CHECK(kinds_of(left) == std::vector<std::uint32_t>{9022, 39002, 9001});
  CHECK(left.events.back().ev.pubkey == signer(community).public_key());
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
  CHECK(run(alice, 9022, {}).outcome == room_outcome::not_member);
}

TEST_CASE_METHOD(room_fixture, "a batch of one room's joins is applied in one second, its 39002 written and delivered once",
                 "[integration][rooms]") {
  open_room();
  std::int64_t opened = now;
  // Flotilla's "add members" sends one 9000 per person at once; people join by one link.
  std::vector<storage::room_command> burst{
    room_command(alice, 9021, {{"h", "pizza"}}, now), room_command(bob, 9021, {{"h", "pizza"}}, now),
    room_command(owner, 9000, {{"h", "pizza"}, {"p", carol.pubkey_hex()}}, now),
    room_command(alice, 9021, {{"h", "pizza"}, {"alt", "again"}}, now)};
  auto batch = rooms.apply_batch(community, burst, now);
  // The room's state of `opened` is written: the whole batch waits, once.
  REQUIRE(batch.retry_at == opened + 1);
  CHECK(batch.writes.empty());
  now = batch.retry_at;
  batch = rooms.apply_batch(community, burst, now);
  REQUIRE(batch.retry_at == 0);
  REQUIRE(batch.writes.size() == 4);
  CHECK(now == opened + 1);
  CHECK(batch.writes[0].outcome == room_outcome::changed);
  CHECK(batch.writes[1].outcome == room_outcome::changed);
  CHECK(batch.writes[2].outcome == room_outcome::changed);
  CHECK(batch.writes[3].outcome == room_outcome::already_member); // read what the first wrote
  // One 39002, the last, goes out and stays stored; each join has its relay 9000 (the owner's
  // put is its own 9000).
  std::vector<std::uint32_t> kinds;
  for (const auto& write : batch.writes)
    for (auto kind : kinds_of(write))
      kinds.push_back(kind);
  CHECK(kinds == std::vector<std::uint32_t>{9021, 9000, 9021, 9000, 9000, 39002});
  CHECK(batch.writes[2].events.at(1).ev.created_at == now);
  auto listed = listed_members();
  CHECK(std::set<std::string>(listed.begin(), listed.end())
        == std::set<std::string>{owner.pubkey_hex(), alice.pubkey_hex(), bob.pubkey_hex(), carol.pubkey_hex()});
  CHECK(batch.writes[0].state_version == batch.writes[2].state_version);
  CHECK(batch.writes[0].state_version > 0);
}

TEST_CASE_METHOD(room_fixture, "a closed room admits with a 9009 code, stored hashed",
                 "[integration][rooms]") {
  open_room();
  auto closing = run(owner, 9002, {{"name", "Pizza"}, {"closed"}});
  CHECK(kinds_of(closing) == std::vector<std::uint32_t>{9002, 39000});
  CHECK(run(alice, 9021, {}).outcome == room_outcome::invite_required);
  CHECK(run(alice, 9021, {{"code", "wrong"}}).outcome == room_outcome::invite_required);
  CHECK(run(alice, 9009, {{"code", "secret-code"}}).outcome == room_outcome::not_allowed);
  auto invite = run(owner, 9009, {{"code", "secret-code"}});
  CHECK(kinds_of(invite) == std::vector<std::uint32_t>{9009});
  CHECK(count("SELECT count(*) FROM room_invites WHERE community_id = $1::bigint"
              " AND code_hash <> 'secret-code'") == "1");
  auto joined = run(alice, 9021, {{"code", "secret-code"}});
  CHECK(joined.outcome == room_outcome::changed);
  // The join is applied but not kept: every reader of the room would read the code in it. The
  // relay's 9000 records it (NIP-29), naming the room and the newcomer only.
  CHECK(kinds_of(joined) == std::vector<std::uint32_t>{39002, 9000});
  CHECK(comb::test::unsalted(joined.events.back().ev.tags)
        == std::vector<comb::protocol::tag>{{"h", "pizza"}, {"p", alice.pubkey_hex()}});
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9021") == "0");
  // The same code again is a no-op: no second invite, no second 9009 stored.
  auto again = run(owner, 9009, {{"code", "secret-code"}, {"alt", "again"}});
  CHECK(again.outcome == room_outcome::nothing_to_do);
  CHECK(again.events.empty());
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9009") == "1");
}

TEST_CASE_METHOD(room_fixture, "a room's invite code lives as long as its 9009: deleted, it is revoked;"
                 " expired, it admits no one",
                 "[integration][rooms]") {
  open_room();
  REQUIRE(run(owner, 9002, {{"name", "Pizza"}, {"closed"}}).committed);
  auto leaked = run(owner, 9009, {{"code", "leaked-code"}});
  REQUIRE(leaked.outcome == room_outcome::changed);
  const auto leaked_id = hex(leaked.events.at(0).ev.id);
  REQUIRE(run(owner, 9009, {{"code", "short-lived"}, {"expiration", std::to_string(now + 1)}}).committed);
  auto alice_joins = [&](const std::string& code, const std::string& alt) {
    std::int64_t later = now + 2;
    return paced_room(rooms, community,
                      room_command(alice, 9021, {{"h", "pizza"}, {"code", code}, {"alt", alt}}, later), later)
      .outcome;
  };
  // The owner deletes the 9009 that carries the leaked code (a 9005 naming it): the code goes
  // with it, and a new 9009 with the same code is a new invite, not a no-op.
  CHECK(run(owner, 9005, {{"e", leaked_id}}).outcome == room_outcome::changed);
  CHECK(count("SELECT count(*) FROM room_invites WHERE community_id = $1::bigint") == "1");
  CHECK(alice_joins("leaked-code", "1") == room_outcome::invite_required);
  // Past its NIP-40 expiration, a code admits no one, even before the purge deletes its 9009.
  CHECK(alice_joins("short-lived", "2") == room_outcome::invite_required);
  auto fresh = run(owner, 9009, {{"code", "leaked-code"}, {"alt", "fresh"}});
  CHECK(fresh.outcome == room_outcome::changed);
  CHECK(alice_joins("leaked-code", "3") == room_outcome::changed);
  // Any deletion of a 9009 revokes its code: here the NIP-09 or ban paths' plain DELETE.
  scalar(connection, "DELETE FROM events WHERE id = $1::bytea RETURNING 1",
         {"\\x" + hex(fresh.events.at(0).ev.id)});
  CHECK(count("SELECT count(*) FROM room_invites WHERE community_id = $1::bigint AND code_hash ="
              " encode(sha256('leaked-code'), 'hex')") == "0");
}

TEST_CASE_METHOD(room_fixture, "a room's invite code ends with its maker's power to make codes, and never lets"
                 " back in someone a moderator removed",
                 "[integration][rooms]") {
  open_room();
  REQUIRE(run(owner, 9002, {{"name", "Pizza"}, {"closed"}}).committed);
  REQUIRE(run(owner, 9000, {{"p", bob.pubkey_hex(), "admin"}}).outcome == room_outcome::changed);
  REQUIRE(run(bob, 9009, {{"code", "bobs-code"}}).outcome == room_outcome::changed);
  REQUIRE(run(owner, 9009, {{"code", "owners-code"}}).outcome == room_outcome::changed);
  auto removals = [&] { return count("SELECT count(*) FROM room_removals WHERE community_id = $1::bigint"); };
  // Removed by a moderator, Alice is not let back in by the code she holds, nor by another.
  CHECK(run(alice, 9021, {{"code", "bobs-code"}}).outcome == room_outcome::changed);
  CHECK(run(owner, 9001, {{"p", alice.pubkey_hex()}}).outcome == room_outcome::changed);
  CHECK(removals() == "1");
  CHECK(run(alice, 9021, {{"code", "bobs-code"}, {"alt", "back"}}).outcome == room_outcome::invite_required);
  CHECK(run(alice, 9021, {{"code", "owners-code"}}).outcome == room_outcome::invite_required);
  // Leaving by oneself is no removal.
  CHECK(run(carol, 9021, {{"code", "bobs-code"}}).outcome == room_outcome::changed);
  CHECK(run(carol, 9022, {}).outcome == room_outcome::changed);
  CHECK(run(carol, 9021, {{"code", "bobs-code"}, {"alt", "back"}}).outcome == room_outcome::changed);
  // A moderator's add lifts the removal.
  CHECK(run(owner, 9000, {{"p", alice.pubkey_hex()}}).outcome == room_outcome::changed);
  CHECK(removals() == "0");
  CHECK(run(alice, 9022, {}).outcome == room_outcome::changed);
  CHECK(run(alice, 9021, {{"code", "owners-code"}, {"alt", "again"}}).outcome == room_outcome::changed);
  // Removed just after leaving by herself, Carol is not let back in either.
  CHECK(run(carol, 9022, {{"alt", "before the kick"}}).outcome == room_outcome::changed);
  CHECK(run(owner, 9001, {{"p", carol.pubkey_hex()}}).outcome == room_outcome::not_member);
  CHECK(run(carol, 9021, {{"code", "bobs-code"}, {"alt", "after the kick"}}).outcome == room_outcome::invite_required);
  CHECK(run(owner, 9000, {{"p", carol.pubkey_hex()}}).outcome == room_outcome::changed);
  // Bob, removed from the room, may no longer make codes in it: the one he made admits no one.
  CHECK(run(owner, 9001, {{"p", bob.pubkey_hex()}}).outcome == room_outcome::changed);
  CHECK(run(carol, 9022, {{"alt", "again"}}).outcome == room_outcome::changed);
  CHECK(run(carol, 9021, {{"code", "bobs-code"}, {"alt", "demoted"}}).outcome == room_outcome::invite_required);
  CHECK(run(carol, 9021, {{"code", "owners-code"}}).outcome == room_outcome::changed);
}

TEST_CASE_METHOD(room_fixture, "a request keeps its NIP-40 expiration, and once deleted is not applied again",
                 "[integration][rooms]") {
  open_room();
  const auto expires = std::to_string(now + 3600);
  REQUIRE(run(alice, 9021, {{"expiration", expires}}).outcome == room_outcome::changed);
  CHECK(count("SELECT expires_at FROM events WHERE community_id = $1::bigint AND kind = 9021") == expires);
  // The owner puts bob in, deletes that 9000 (a 9005 naming it) and removes him: the same 9000
  // sent again must not bring him back.
  auto put_bob = room_command(owner, 9000, {{"h", "pizza"}, {"p", bob.pubkey_hex()}}, now);
  REQUIRE(paced_room(rooms, community, put_bob, now).outcome == room_outcome::changed);
  CHECK(run(owner, 9005, {{"e", hex(put_bob.ev.id)}}).outcome == room_outcome::changed);
  REQUIRE(run(owner, 9001, {{"p", bob.pubkey_hex()}}).outcome == room_outcome::changed);
  CHECK(paced_room(rooms, community, put_bob, now).outcome == room_outcome::deleted);
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex(), alice.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "a deletion by someone else of a request's id, sent before it, does not stop it",
                 "[integration][rooms]") {
  open_room();
  // What the event store keeps for a kind 5 by bob naming an id he does not hold (carried out,
  // not kept): a tombstone under bob's key. welshman's requests have predictable ids.
  auto put_alice = room_command(owner, 9000, {{"h", "pizza"}, {"p", alice.pubkey_hex()}}, now);
  scalar(connection, "INSERT INTO deleted_events (community_id, event_id, pubkey) VALUES ($1::bigint, $2::bytea,"
         " $3::bytea) RETURNING 1", {std::to_string(community), "\\x" + hex(put_alice.ev.id), "\\x" + bob.pubkey_hex()});
  CHECK(paced_room(rooms, community, put_alice, now).outcome == room_outcome::changed);
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex(), alice.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "roles: a moderator deletes events, only admins grant roles",
                 "[integration][rooms]") {
  open_room();
  auto put = run(owner, 9000, {{"p", alice.pubkey_hex(), "moderator"}});
  CHECK(kinds_of(put) == std::vector<std::uint32_t>{9000, 39001, 39002});
  CHECK(run(alice, 9000, {{"p", bob.pubkey_hex(), "admin"}}).outcome == room_outcome::not_allowed);
  CHECK(run(alice, 9000, {{"p", bob.pubkey_hex()}}).outcome == room_outcome::changed);
  auto chat = bob.sign(9, now, {{"h", "pizza"}}, "hello");
  REQUIRE(store_one(events, community, chat).result == storage::store_outcome::status::stored);
  auto deleted = run(alice, 9005, {{"e", hex(chat->id)}});
  CHECK(deleted.outcome == room_outcome::changed);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9") == "0");
  // Deleting it again deletes nothing and stores nothing.
  auto twice = run(alice, 9005, {{"e", hex(chat->id)}, {"alt", "again"}});
  CHECK(twice.outcome == room_outcome::nothing_to_do);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9005") == "1");
  // Gone for good: the same event posted again is refused.
  CHECK(store_one(events, community, chat).result != storage::store_outcome::status::stored);
}

TEST_CASE_METHOD(room_fixture, "a moderator's 9005 deletes neither the owner's events nor the relay's records",
                 "[integration][rooms]") {
  open_room();
  auto put = run(owner, 9000, {{"p", alice.pubkey_hex(), "moderator"}});
  REQUIRE(put.outcome == room_outcome::changed);
  REQUIRE(run(owner, 9000, {{"p", bob.pubkey_hex()}}).outcome == room_outcome::changed);
  auto owners = owner.sign(9, now, {{"h", "pizza"}}, "the owner's word");
  auto bobs = bob.sign(9, now, {{"h", "pizza"}}, "bob's word");
  REQUIRE(store_one(events, community, owners).result == storage::store_outcome::status::stored);
  REQUIRE(store_one(events, community, bobs).result == storage::store_outcome::status::stored);
  auto records = [&] {
    return count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind IN (9000, 39000, 39001, 39002)");
  };
  const auto records_before = records();
  // The relay's own 9000 and the room's state, and the owner's post: none of alice's to delete.
  std::vector<protocol::tag> targets{{"e", hex(owners->id)}};
  for (const auto& written : put.events)
    targets.push_back({"e", hex(written.ev.id)});
  CHECK(run(alice, 9005, targets).outcome == room_outcome::nothing_to_do);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9") == "2");
  CHECK(records() == records_before);
  CHECK(run(alice, 9005, {{"e", hex(bobs->id)}}).outcome == room_outcome::changed);
  // The owner deletes its own.
  CHECK(run(owner, 9005, {{"e", hex(owners->id)}}).outcome == room_outcome::changed);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9") == "0");
}

TEST_CASE_METHOD(room_fixture, "a 9010 writes the room's 39005 in its transaction, replacing the last",
                 "[integration][rooms]") {
  open_room();
  REQUIRE(run(owner, 9000, {{"p", alice.pubkey_hex(), "moderator"}}).committed);
  REQUIRE(run(owner, 9000, {{"p", bob.pubkey_hex()}}).committed);
  const std::string first(64, 'a'), second(64, 'b');
  CHECK(run(bob, 9010, {{"e", first}}).outcome == room_outcome::not_allowed);
  auto pinned = run(alice, 9010, {{"e", first}, {"e", second}});
  CHECK(pinned.outcome == room_outcome::changed);
  CHECK(kinds_of(pinned) == std::vector<std::uint32_t>{9010, 39005});
  CHECK(pinned.events.at(1).ev.pubkey == signer(community).public_key());
  CHECK(comb::test::unsalted(pinned.events.at(1).ev.tags)
        == std::vector<protocol::tag>{{"d", "pizza"}, {"e", first}, {"e", second}});
  auto unpinned = run(owner, 9010, {{"e", second}});
  CHECK(kinds_of(unpinned) == std::vector<std::uint32_t>{9010, 39005});
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39005") == "1");
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39005"
              " AND raw LIKE '%" + second + "%' AND raw NOT LIKE '%" + first + "%'") == "1");
  CHECK(run(owner, 9008, {}).committed);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39005") == "0");
}

TEST_CASE_METHOD(room_fixture, "deleting a room removes it, its state and its events",
                 "[integration][rooms]") {
  open_room();
  auto joined = run(alice, 9021, {});
  REQUIRE(joined.committed);
  std::int64_t old_state_second = joined.events.at(1).ev.created_at;
  REQUIRE(store_one(events, community, alice.sign(9, now, {{"h", "pizza"}}, "hi")).result
          == storage::store_outcome::status::stored);
  auto gone = run(owner, 9008, {});
  CHECK(gone.outcome == room_outcome::changed);
  // The 9008 is no newer than the room's state (the join's, signed a second later): Flotilla
  // would keep listing the room, so the relay signs a 9008 of its own after that state.
  CHECK(kinds_of(gone) == std::vector<std::uint32_t>{9008, 9008});
  REQUIRE(gone.events.size() == 2);
  CHECK(gone.events.at(1).ev.pubkey == signer(community).public_key());
  CHECK(comb::test::unsalted(gone.events.at(1).ev.tags) == std::vector<protocol::tag>{{"h", "pizza"}});
  CHECK(gone.events.at(1).ev.created_at > old_state_second);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9008") == "2");
  CHECK(count("SELECT count(*) FROM rooms WHERE community_id = $1::bigint") == "0");
  CHECK(count("SELECT count(*) FROM room_members WHERE community_id = $1::bigint") == "0");
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint"
              " AND (kind = 9 OR kind BETWEEN 39000 AND 39005)") == "0");
  // Created again, its state never reuses a second of the old room's.
  auto again = run(owner, 9007, {{"alt", "again"}});
  CHECK(again.events.at(1).ev.created_at > gone.events.at(1).ev.created_at);
  CHECK(again.outcome == room_outcome::changed);
  // A deletion newer than the room's state is the one Flotilla goes by: the relay adds none.
  auto later = paced_room(rooms, community, room_command(owner, 9008, {{"h", "pizza"}}, now + 60), now);
  CHECK(kinds_of(later) == std::vector<std::uint32_t>{9008});
}

TEST_CASE_METHOD(room_fixture, "a post admitted into a room deleted before its batch is refused, not stored",
                 "[integration][rooms][race]") {
  open_room();
  auto post_to_room = [&](const std::string& text) {
    auto write = write_of(community, alice.sign(9, now, {{"h", "pizza"}}, text));
    write.rooms = {"pizza"}; // what the connection admitted it into, from its cache
    std::vector<storage::event_write> writes{write};
    return events.store_batch(writes).at(0);
  };
  REQUIRE(post_to_room("while the room stands").result == storage::store_outcome::status::stored);

  // A batch in flight holds the community's event lock shared: the deletion waits for it, so
  // the batch's post is deleted with the room rather than left behind.
  storage::room_write gone;
  REQUIRE(waits_for_event_batch(database.conninfo(), connection, community, [&] { gone = run(owner, 9008, {}); }));
  REQUIRE(gone.outcome == room_outcome::changed);

  // Admitted while the cache still held the room, stored after the deletion committed.
  auto late = post_to_room("admitted before the deletion, stored after it");
  CHECK(late.result == storage::store_outcome::status::refused);
  CHECK(late.message == storage::msg_room_deleted);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9") == "0");
  // An import names no admitted room: it is stored as before.
  CHECK(store_one(events, community, alice.sign(9, now, {{"h", "pizza"}}, "imported")).result
        == storage::store_outcome::status::stored);
}

TEST_CASE_METHOD(room_fixture, "a room bound reached is refused by name and writes nothing",
                 "[integration][rooms]") {
  open_room();
  auto fill = [&](const std::string& sql) {
    storage::pg_connection filler(database.conninfo());
    auto filled = filler.exec(sql, {std::to_string(community)});
    INFO(filled.error());
    REQUIRE(filled.ok());
  };
  // The other rows of each bound, written directly: only the one request over it goes through.
  fill("INSERT INTO room_invites (community_id, room_id, code_hash) SELECT $1::bigint, 'pizza',"
       " 'code' || i FROM generate_series(1, " + std::to_string(storage::max_invites_per_room) + ") i");
  auto invite = run(owner, 9009, {{"code", "one-more"}});
  CHECK(invite.outcome == room_outcome::too_many_invites);
  CHECK(invite.events.empty());
  fill("INSERT INTO room_members (community_id, room_id, pubkey) SELECT $1::bigint, 'pizza',"
       " decode(lpad(to_hex(i), 64, '0'), 'hex') FROM generate_series(1, "
       + std::to_string(storage::max_members_per_room - 1) + ") i");
  auto joined = run(alice, 9021, {});
  CHECK(joined.outcome == room_outcome::too_many_members);
  CHECK(joined.events.empty());
  fill("INSERT INTO rooms (community_id, room_id) SELECT $1::bigint, 'room' || i FROM"
       " generate_series(2, " + std::to_string(storage::max_rooms_per_community) + ") i");
  auto created = paced_room(rooms, community, room_command(owner, 9007, {{"h", "one-more"}}, now), now);
  CHECK(created.outcome == room_outcome::too_many_rooms);
  CHECK(created.events.empty());
  CHECK(count("SELECT count(*) FROM rooms WHERE community_id = $1::bigint")
        == std::to_string(storage::max_rooms_per_community));
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind IN (9009, 9021)") == "0");
}

TEST_CASE_METHOD(room_fixture, "a failed room write rolls everything back", "[integration][rooms]") {
  open_room();
  storage::pg_connection holder(database.conninfo());
  REQUIRE(holder.exec("BEGIN").ok());
  REQUIRE(holder.exec("LOCK TABLE room_clocks IN ACCESS EXCLUSIVE MODE").ok());
  REQUIRE_FALSE(connection.ensure_connected());
  storage::room_write joined;
  auto join = room_command(alice, 9021, {{"h", "pizza"}}, now);
  std::thread writer([&] { joined = rooms.apply(community, join, now + 5); });
  storage::pg_connection observer(database.conninfo());
  bool blocked = blocked_on_lock(observer, connection.backend_pid());
  connection.cancel();
  writer.join();
  (void)holder.exec("ROLLBACK");
  REQUIRE(blocked);
  CHECK_FALSE(joined.committed);
  CHECK(joined.outcome == room_outcome::failed);
  CHECK(count("SELECT count(*) FROM room_members WHERE community_id = $1::bigint") == "1");
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 9021") == "0");
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "concurrent joins over separate connections all land in 39002",
                 "[integration][rooms][race]") {
  open_room();
  constexpr int joiners = 6;
  std::vector<std::unique_ptr<author>> people;
  std::vector<storage::room_write> writes(joiners);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int i = 0; i < joiners; ++i)
    people.push_back(std::make_unique<author>(static_cast<std::uint8_t>(20 + i)));
  std::int64_t start = now;
  for (int i = 0; i < joiners; ++i)
    threads.emplace_back([&, i] {
      storage::pg_connection own(database.conninfo());
      storage::room_store store(own, relay_key);
      auto join = room_command(*people[i], 9021, {{"h", "pizza"}}, start);
      std::int64_t clock = start;
      ++ready;
      while (ready < joiners)
        std::this_thread::yield();
      writes[i] = paced_room(store, community, join, clock);
    });
  for (auto& t : threads)
    t.join();
  for (const auto& w : writes)
    CHECK(w.outcome == room_outcome::changed);
  auto listed = listed_members();
  CHECK(listed.size() == joiners + 1);
  for (const auto& person : people)
    CHECK(std::find(listed.begin(), listed.end(), person->pubkey_hex()) != listed.end());
  // Each join wrote its own 39002 at its own second: none reused a created_at.
  std::set<std::int64_t> seconds;
  for (const auto& w : writes)
    seconds.insert(w.events.at(1).ev.created_at);
  CHECK(seconds.size() == joiners);
}

TEST_CASE_METHOD(room_fixture, "banning someone who is in a room but not a member removes them from it",
                 "[integration][rooms][nip86]") {
  // An open community: anyone may join a room without being a member; a ban must end that too.
  open_room();
  REQUIRE(run(alice, 9021, {}).committed);
  REQUIRE(listed_members() == std::vector<std::string>{owner.pubkey_hex(), alice.pubkey_hex()});
  auto ban = command(membership_change::ban_pubkey, alice.pubkey());
  ban.requested_by = owner.pubkey();
  auto banned = apply(ban);
  REQUIRE(banned.committed);
  CHECK_FALSE(banned.list); // not a member: the community's list is unchanged
  REQUIRE(banned.room_events.size() == 1);
  // Recorded with the change's version, so every pod delivers the new 39002 from the database.
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint AND event_id = '\\x"
              + protocol::to_hex(banned.room_events[0].ev.id) + "'") == "1");
  REQUIRE(banned.rooms);
  CHECK(count("SELECT count(*) FROM room_members WHERE community_id = $1::bigint") == "1");
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "a removal from a busy room goes one second ahead of its clock rather than wait, never two",
                 "[integration][rooms][nip86]") {
  // A room busy with requests takes each second's state as it begins: a ban that waited for a
  // second the room had not taken could wait as long as the room stays busy.
  open_room();
  REQUIRE(run(alice, 9021, {}).committed);
  REQUIRE(run(bob, 9021, {}).committed);
  const auto at = now; // the room's newest state has this second
  REQUIRE(count("SELECT newest_state_at FROM room_clocks WHERE community_id = $1::bigint"
                " AND room_id = 'pizza'") == std::to_string(at));
  auto ban_of = [&](const author& who) {
    auto ban = command(membership_change::ban_pubkey, who.pubkey());
    ban.requested_by = owner.pubkey();
    return ban;
  };
  auto ban_alice = ban_of(alice);
  auto first = members.apply(community, std::span(&ban_alice, 1), at);
  REQUIRE(first.committed);
  REQUIRE(first.room_events.size() == 1);
  CHECK(first.room_events[0].ev.created_at == at + 1);
  // Another in the same second would be two ahead: it waits for the room's next second.
  auto ban_bob = ban_of(bob);
  auto second = members.apply(community, std::span(&ban_bob, 1), at);
  CHECK_FALSE(second.committed);
  CHECK(second.retry_at == at + 1);
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex(), bob.pubkey_hex()});
  auto then = members.apply(community, std::span(&ban_bob, 1), at + 1);
  REQUIRE(then.committed);
  REQUIRE(then.room_events.size() == 1);
  CHECK(then.room_events[0].ev.created_at == at + 2);
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "a banned user cannot join a room or be put back in one, and an archived community's rooms take no request",
                 "[integration][rooms]") {
  // Decided under the community's lock: a pod whose cache has not yet seen the ban (or a request
  // queued before it) must not put the banned user back, and a moderator cannot either.
  open_room();
  auto ban = command(membership_change::ban_pubkey, alice.pubkey());
  ban.requested_by = owner.pubkey();
  REQUIRE(apply(ban).committed);
  CHECK(run(alice, 9021, {}).outcome == room_outcome::banned);
  CHECK(run(owner, 9000, {{"p", alice.pubkey_hex()}}).outcome == room_outcome::banned);
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
  CHECK(count("SELECT count(*) FROM room_members WHERE community_id = $1::bigint") == "1");
  storage::pg_connection archiver(database.conninfo());
  REQUIRE(archiver.exec("UPDATE communities SET archived_at = now() WHERE id = $1::bigint",
                        {std::to_string(community)}).ok());
  CHECK(run(bob, 9021, {}).outcome == room_outcome::archived);
}

TEST_CASE_METHOD(room_fixture, "removing a community member removes them from every room at once",
                 "[integration][rooms]") {
  REQUIRE(apply(command(membership_change::add_member, alice.pubkey())).committed);
  open_room();
  REQUIRE(run(owner, 9000, {{"p", alice.pubkey_hex(), "moderator"}}).committed);
  open_room("pasta");
  REQUIRE(paced_room(rooms, community, room_command(alice, 9021, {{"h", "pasta"}}, now), now).outcome
          == room_outcome::changed);
  auto removed = apply(command(membership_change::remove_member, alice.pubkey()));
  REQUIRE(removed.committed);
  REQUIRE(removed.list);
  // pizza: 39001 (she had a role) and 39002; pasta: 39002.
  std::multiset<std::uint32_t> kinds;
  for (const auto& ev : removed.room_events)
    kinds.insert(ev.ev.kind);
  CHECK(kinds == std::multiset<std::uint32_t>{39001, 39002, 39002});
  REQUIRE(removed.rooms);
  CHECK(removed.rooms->size() == 2);
  CHECK(count("SELECT count(*) FROM room_members WHERE community_id = $1::bigint") == "2");
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
}

TEST_CASE_METHOD(room_fixture, "a moderator's 9005 deletes a comment posted in one of the room's threads",
                 "[integration][rooms]") {
  open_room();
  REQUIRE(run(owner, 9000, {{"p", alice.pubkey_hex(), "moderator"}}).committed);
  auto thread = bob.sign(11, now, {{"h", "pizza"}}, "a thread");
  REQUIRE(store_one(events, community, thread).result == storage::store_outcome::status::stored);
  // What Flotilla's makeComment sends: no h of its own, the thread's rooms borrowed.
  auto abuse = carol.sign(1111, now, {{"K", "11"}, {"E", hex(thread->id)}, {"e", hex(thread->id)}}, "abuse");
  auto stored = store_one(events, community, abuse);
  REQUIRE(stored.result == storage::store_outcome::status::stored);
  REQUIRE(stored.borrowed_rooms == std::vector<std::string>{"pizza"});
  CHECK(run(alice, 9005, {{"e", hex(abuse->id)}}).outcome == room_outcome::changed);
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 1111") == "0");
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 11") == "1");
}

TEST_CASE_METHOD(room_fixture, "a newcomer to a hidden room gets its state signed again, newer than before they came",
                 "[integration][rooms]") {
  open_room();
  REQUIRE(run(owner, 9002, {{"name", "Pizza"}, {"hidden"}}).outcome == room_outcome::changed);
  auto put = run(owner, 9000, {{"p", alice.pubkey_hex()}});
  REQUIRE(put.outcome == room_outcome::changed);
  // Flotilla lists rooms by their 39000, loaded with a `since` once it has some: one signed
  // before alice could read it would never reach her.
  CHECK(kinds_of(put) == std::vector<std::uint32_t>{9000, 39000, 39001, 39002, 39003});
  CHECK(count("SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39000") == "1");
}
