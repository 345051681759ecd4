// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "protocol/hex.hpp"
#include "storage/store_plan.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace std::chrono_literals;
using comb::test::author;
using comb::test::json_of;
using comb::test::jsons_of;
using comb::test::store_one;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

std::vector<std::string> everything(test::store_fixture& f, std::int64_t at) {
  auto result = f.events.query(f.community, {protocol::filter{}}, at, 100);
  REQUIRE(result.ok);
  return result.events;
}

std::uint64_t count_all(test::store_fixture& f, std::int64_t at) {
  auto result = f.events.count(f.community, {protocol::filter{}}, at);
  REQUIRE(result.ok);
  return result.count;
}

/// `member` is in the community's restricted room "office", and `admin` one of its admins (who
/// may post in any room).
void office_with(test::store_fixture& f, const author& member, const author& admin) {
  const std::string id = std::to_string(f.community);
  (void)test::scalar(f.connection, "INSERT INTO room_members (community_id, room_id, pubkey)"
                                   " VALUES ($1::bigint, 'office', decode($2, 'hex')) RETURNING 1",
                     {id, protocol::to_hex(member.pubkey())});
  (void)test::scalar(f.connection, "INSERT INTO members (community_id, pubkey, role)"
                                   " VALUES ($1::bigint, decode($2, 'hex'), 'admin') RETURNING 1",
                     {id, protocol::to_hex(admin.pubkey())});
}

} // namespace

TEST_CASE_METHOD(test::store_fixture, "expired events are hidden from query and count, then purged",
                 "[integration][event_store][nip40]") {
  author alice{8};
  auto lasting = alice.sign(1, now - 10);
  auto expiring = alice.sign(1, now - 5, {{"expiration", std::to_string(now + 60)}});
  for (const auto& ev : {lasting, expiring})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  CHECK(everything(*this, now) == jsons_of({expiring, lasting}));
  CHECK(count_all(*this, now) == 2);
  CHECK(everything(*this, now + 60) == jsons_of({lasting})); // expiration <= now: gone
  CHECK(count_all(*this, now + 60) == 1);
  CHECK(events.purge_expired(now + 59) == 0);
  CHECK(events.purge_expired(now + 60) == 1);
  CHECK(test::scalar(connection, "SELECT count(*) FROM events") == "1");
  CHECK(events.purge_expired(now + 1000) == 0);
}

TEST_CASE_METHOD(test::store_fixture, "a pod whose clock is ahead of the database's purges nothing that has not expired by the database's",
                 "[integration][event_store][nip40]") {
  author alice{8};
  const std::int64_t database_now = std::stoll(test::scalar(connection, "SELECT extract(epoch FROM now())::bigint::text"));
  auto next_year = alice.sign(1, now, {{"expiration", std::to_string(database_now + 365 * 86400)}});
  REQUIRE(store_one(events, community, next_year).result == status::stored);
  CHECK(events.purge_expired(database_now + 10 * 365 * 86400) == 0); // a pod ten years ahead
  CHECK(test::scalar(connection, "SELECT count(*) FROM events") == "1");
}

TEST_CASE_METHOD(test::store_fixture, "one bad write in a batch does not fail its neighbours",
                 "[integration][event_store]") {
  author alice{9};
  auto first = alice.sign(1, now - 3);
  auto orphan = alice.sign(1, now - 2); // its community does not exist: a foreign key error
  auto last = alice.sign(1, now - 1);
  std::vector writes{test::write_of(community, first), test::write_of(community + 1000, orphan),
                     test::write_of(community, last)};
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 3);
  CHECK(outcomes[0].result == status::stored);
  CHECK(outcomes[1].result == status::failed);
  CHECK(outcomes[1].message == "error: could not store the event, please retry");
  CHECK(outcomes[2].result == status::stored);
  CHECK(everything(*this, now) == jsons_of({last, first}));
}

TEST_CASE_METHOD(test::store_fixture, "a large batch is stored in one go",
                 "[integration][event_store]") {
  author alice{10};
  std::vector<storage::event_write> writes;
  for (int i = 0; i < 400; ++i)
    writes.push_back(test::write_of(
      community, alice.sign(1, now - i, {{"t", "n" + std::to_string(i % 7)}, {"e", "x"}})));
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == writes.size());
  CHECK(std::all_of(outcomes.begin(), outcomes.end(),
                    [](const auto& o) { return o.result == status::stored; }));
  CHECK(count_all(*this, now) == 400);
  protocol::filter f;
  f.tags.push_back({'t', {"n3"}});
  auto result = events.count(community, {f}, now);
  REQUIRE(result.ok);
  CHECK(result.count == 57);
}

TEST_CASE_METHOD(test::store_fixture, "after the backend is terminated the store reconnects",
                 "[integration][event_store]") {
  author alice{11};
  REQUIRE(store_one(events, community, alice.sign(1, now - 3)).result == status::stored);
  int pid = connection.backend_pid();
  REQUIRE(pid != 0);
  storage::pg_connection killer(test::admin_conninfo());
  REQUIRE(test::scalar(killer, "SELECT pg_terminate_backend($1::int)", {std::to_string(pid)})
          == "t");
  for (int i = 0; i < 100 && test::scalar(killer, "SELECT count(*) FROM pg_stat_activity"
                                                  " WHERE pid = $1::int",
                                          {std::to_string(pid)})
                               != "0";
       ++i)
    std::this_thread::sleep_for(20ms);
  auto second = alice.sign(1, now - 2);
  auto outcome = store_one(events, community, second);
  CHECK((outcome.result == status::stored || outcome.result == status::failed));
  auto third = alice.sign(1, now - 1);
  CHECK(store_one(events, community, third).result == status::stored);
  CHECK(connection.backend_pid() != pid);
  CHECK(count_all(*this, now) == (outcome.result == status::stored ? 3 : 2));
  // Reads reconnect too.
  REQUIRE(test::scalar(killer, "SELECT pg_terminate_backend($1::int)",
                       {std::to_string(connection.backend_pid())})
          == "t");
  std::this_thread::sleep_for(100ms);
  CHECK(events.query(community, {protocol::filter{}}, now, 10).ok);
}

TEST_CASE_METHOD(test::store_fixture, "two writers storing the same events in opposite orders never deadlock",
                 "[integration][event_store][race]") {
  // A relay runs several writers, and clients rebroadcast: the same events can reach two
  // writers at once, in any order. Rows go in by id, so neither waits on the other in a cycle.
  author alice{12};
  storage::pg_connection other_connection(database.conninfo());
  storage::event_store other(other_connection);
  auto deadlocks = [&] {
    (void)test::scalar(connection, "SELECT pg_stat_force_next_flush()::text");
    return test::scalar(connection, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()");
  };
  auto before = deadlocks();
  int stored = 0;
  int duplicates = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<storage::event_write> forward;
    for (int i = 0; i < 200; ++i)
      forward.push_back(test::write_of(community, alice.sign(1, now - round * 1000 - i)));
    std::vector<storage::event_write> backward(forward.rbegin(), forward.rend());
    std::vector<storage::store_outcome> a, b;
    {
      std::jthread first([&] { a = events.store_batch(forward); });
      std::jthread second([&] { b = other.store_batch(backward); });
    }
    for (const auto& outcomes : {a, b})
      for (const auto& o : outcomes) {
        stored += o.result == status::stored;
        // The writer that lost the race replays its batch and answers duplicates, never failures.
        duplicates += o.result == status::duplicate && o.message == storage::msg_already_have;
      }
  }
  CHECK(stored == 20 * 200);
  CHECK(duplicates == 20 * 200);
  CHECK(deadlocks() == before);
}

TEST_CASE_METHOD(test::store_fixture, "a banned author's events are served to no one until the ban is lifted",
                 "[integration][event_store][nip86]") {
  author alice{30};
  author bob{31};
  auto kept = alice.sign(1, now - 3);
  auto hidden = bob.sign(1, now - 2);
  for (const auto& ev : {kept, hidden})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  test::scalar(connection, "INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, decode($2, 'hex'))",
               {std::to_string(community), bob.pubkey_hex()});
  CHECK(everything(*this, now) == jsons_of({kept}));
  CHECK(count_all(*this, now) == 1);
  protocol::filter by_id;
  by_id.ids = {hidden->id};
  CHECK(events.query(community, {by_id}, now, 10).events.empty());
  test::scalar(connection, "DELETE FROM banned_pubkeys");
  CHECK(everything(*this, now) == jsons_of({hidden, kept}));
}

TEST_CASE_METHOD(test::store_fixture, "a comment is stored with its thread's rooms, and hidden where they are",
                 "[integration][event_store][rooms]") {
  author alice{11};
  auto kitchen_thread = alice.sign(11, now - 10, {{"h", "kitchen"}});
  REQUIRE(store_one(events, community, kitchen_thread).result == status::stored);
  auto on_kitchen = alice.sign(1111, now - 9, {{"K", "11"}, {"E", protocol::to_hex(kitchen_thread->id)}});
  auto pantry_thread = alice.sign(11, now - 8, {{"h", "pantry"}});
  // Its thread stored earlier in the same batch counts too.
  auto on_pantry = alice.sign(1111, now - 7, {{"K", "11"}, {"E", protocol::to_hex(pantry_thread->id)}});
  auto on_nothing = alice.sign(1111, now - 6, {{"E", std::string(64, 'c')}});
  std::vector writes{test::write_of(community, on_kitchen), test::write_of(community, pantry_thread),
                     test::write_of(community, on_pantry), test::write_of(community, on_nothing)};
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 4);
  CHECK(outcomes[0].borrowed_rooms == std::vector<std::string>{"kitchen"});
  CHECK_FALSE(outcomes[1].borrowed_rooms);
  CHECK(outcomes[2].borrowed_rooms == std::vector<std::string>{"pantry"});
  CHECK(outcomes[3].borrowed_rooms == std::vector<std::string>{});

  auto read = [&](const protocol::filter& f, const protocol::room_hiding& hiding) {
    std::vector<std::string> got;
    auto keep = [&](storage::query_result chunk) {
      got.insert(got.end(), chunk.events.begin(), chunk.events.end());
      return true;
    };
    auto rest = events.query_chunks(community, {f}, now, 100, 1 << 20, keep, {}, hiding);
    REQUIRE(rest.ok);
    got.insert(got.end(), rest.events.begin(), rest.events.end());
    auto counted = events.count(community, {f}, now, hiding);
    REQUIRE(counted.ok);
    CHECK(counted.count == got.size());
    return got;
  };
  protocol::filter comments;
  comments.kinds = std::vector<std::uint32_t>{1111};
  CHECK(read(comments, {}) == jsons_of({on_nothing, on_pantry, on_kitchen}));
  protocol::room_hiding kitchen_unseen;
  kitchen_unseen.unseen = {"kitchen"};
  CHECK(read(comments, kitchen_unseen) == jsons_of({on_nothing, on_pantry}));
  protocol::room_hiding pantry_private;
  pantry_private.state_only = {"pantry"};
  CHECK(read(comments, pantry_private) == jsons_of({on_nothing, on_kitchen}));
  // A filter that cannot match a comment names no hidden comment rooms (and is not refused for
  // a parameter it does not use); the kitchen's thread is hidden by the room rule.
  protocol::filter threads;
  threads.kinds = std::vector<std::uint32_t>{11};
  auto counted = events.count(community, {threads}, now, kitchen_unseen);
  REQUIRE(counted.ok);
  CHECK(counted.count == 1);
  // A comment's rooms go with it (migration 27): none is left behind to hide an event that
  // might one day carry its id.
  auto room_rows = [&] {
    storage::pg_connection reader(database.conninfo());
    return test::scalar(reader, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint AND name = 'room'",
                        {std::to_string(community)});
  };
  CHECK(room_rows() == "2");
  // The deletion borrows the kitchen from the comment it deletes (so it shows where the comment
  // did), and the comment's own row goes with it.
  auto deletion = alice.sign(5, now - 1, {{"e", protocol::to_hex(on_kitchen->id)}});
  auto deleted = store_one(events, community, deletion);
  REQUIRE(deleted.result == status::stored);
  CHECK(deleted.borrowed_rooms == std::vector<std::string>{"kitchen"});
  CHECK(room_rows() == "2");
  CHECK(test::scalar(connection, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint"
                                 " AND name = 'room' AND event_id = $2::bytea",
                     {std::to_string(community), "\\x" + protocol::to_hex(on_kitchen->id)}) == "0");
  protocol::filter deletions;
  deletions.kinds = std::vector<std::uint32_t>{5};
  CHECK(read(deletions, kitchen_unseen).empty());
  CHECK(read(deletions, {}) == jsons_of({deletion}));
  // Flotilla's reaction to a comment copies the comment's h, which it has none of.
  auto reaction = alice.sign(7, now - 1, {{"k", "1111"}, {"e", protocol::to_hex(on_pantry->id)},
                                          {"p", protocol::to_hex(alice.pubkey())}}, "+");
  auto reacted = store_one(events, community, reaction);
  REQUIRE(reacted.result == status::stored);
  CHECK(reacted.borrowed_rooms == std::vector<std::string>{"pantry"});
  protocol::filter reactions;
  reactions.kinds = std::vector<std::uint32_t>{7};
  CHECK(read(reactions, pantry_private).empty());
  CHECK(read(reactions, kitchen_unseen) == jsons_of({reaction}));
}

TEST_CASE_METHOD(test::store_fixture,
                 "a limited read leaves out what the reader may not see of the rooms before the limit counts",
                 "[integration][event_store][rooms]") {
  author alice{23}, bob{24};
  // Newer posts in the hidden room than the limit: hidden after the limit, they would fill the
  // reply, and the reader would get nothing but an EOSE saying there is no more.
  std::vector<test::event_ptr> lobby, office;
  for (int i = 0; i < 3; ++i)
    lobby.push_back(alice.sign(9, now - 100 + i, {{"h", "lobby"}, {"t", "news"}}));
  for (int i = 0; i < 5; ++i)
    office.push_back(bob.sign(9, now - 50 + i, {{"h", "office"}, {"t", "news"}}));
  for (const auto& ev : lobby)
    REQUIRE(store_one(events, community, ev).result == status::stored);
  for (const auto& ev : office)
    REQUIRE(store_one(events, community, ev).result == status::stored);
  protocol::room_hiding office_unseen;
  office_unseen.unseen = {"office"};
  protocol::room_hiding office_state_only;
  office_state_only.state_only = {"office"};

  protocol::filter posts; // read by kind
  posts.kinds = std::vector<std::uint32_t>{9};
  posts.limit = 2;
  protocol::filter tagged; // read by its tag
  tagged.tags.push_back({'t', {"news"}});
  tagged.limit = 2;
  protocol::filter by_authors; // read per author and kind
  by_authors.authors = {alice.pubkey(), bob.pubkey()};
  by_authors.kinds = std::vector<std::uint32_t>{9};
  by_authors.limit = 2;
  const auto newest_lobby = jsons_of({lobby[2], lobby[1]});
  for (const auto& hiding : {office_unseen, office_state_only})
    for (bool share : {false, true}) {
      for (const auto& f : {posts, tagged, by_authors}) {
        auto result = events.query_chunks(community, {f}, now, 100, 1 << 20,
                                          [](storage::query_result) { return true; }, share, hiding);
        REQUIRE(result.ok);
        std::vector<std::string> got = result.events;
        for (const auto& json : result.shared)
          got.push_back(*json);
        CHECK(got == newest_lobby);
      }
      // Several filters, each with its own limit, in one union.
      protocol::filter by_alice;
      by_alice.authors = {alice.pubkey()};
      by_alice.limit = 1;
      auto result = events.query_chunks(community, {posts, by_alice}, now, 100, 1 << 20,
                                        [](storage::query_result) { return true; }, share, hiding);
      REQUIRE(result.ok);
      CHECK(result.events.size() + result.shared.size() == 2);
    }
  // Nothing hidden: the office's newest fill the limit.
  auto open = events.query_chunks(community, {posts}, now, 100, 1 << 20,
                                  [](storage::query_result) { return true; });
  REQUIRE(open.ok);
  CHECK(open.events == jsons_of({office[4], office[3]}));
}

TEST_CASE_METHOD(test::store_fixture, "a comment in a restricted room's thread is stored only for those who may post there",
                 "[integration][event_store][rooms]") {
  author member{12}, outsider{13}, admin{14};
  const std::string id = std::to_string(community);
  (void)test::scalar(connection, "INSERT INTO rooms (community_id, room_id, restricted) VALUES"
                                 " ($1::bigint, 'office', true), ($1::bigint, 'lobby', false) RETURNING 1",
                     {id});
  office_with(*this, member, admin);
  auto office_thread = member.sign(11, now - 20, {{"h", "office"}});
  auto lobby_thread = member.sign(11, now - 19, {{"h", "lobby"}});
  for (const auto& thread : {office_thread, lobby_thread})
    REQUIRE(store_one(events, community, thread).result == status::stored);
  std::int64_t at = now - 18;
  auto comment = [&](author& who, const test::event_ptr& root) {
    return who.sign(1111, at++, {{"K", "11"}, {"E", protocol::to_hex(root->id)}, {"e", protocol::to_hex(root->id)}});
  };
  // A new thread and comments on it in one batch: its room is read with the batch's.
  auto second_office_thread = member.sign(11, now - 10, {{"h", "office"}});
  std::vector<test::event_ptr> batch{comment(outsider, office_thread), comment(member, office_thread),
                                     comment(admin, office_thread),    comment(outsider, lobby_thread),
                                     second_office_thread,             comment(outsider, second_office_thread),
                                     comment(member, second_office_thread)};
  std::vector<storage::event_write> writes;
  for (const auto& ev : batch)
    writes.push_back(test::write_of(community, ev));
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == batch.size());
  test::check_outcome(outcomes[0], status::refused, storage::msg_room_restricted);
  test::check_outcome(outcomes[1], status::stored, "");
  test::check_outcome(outcomes[2], status::stored, "");
  test::check_outcome(outcomes[3], status::stored, "");
  test::check_outcome(outcomes[4], status::stored, "");
  test::check_outcome(outcomes[5], status::refused, storage::msg_room_restricted);
  test::check_outcome(outcomes[6], status::stored, "");
  CHECK(outcomes[1].borrowed_rooms == std::vector<std::string>{"office"});
  CHECK(outcomes[3].borrowed_rooms == std::vector<std::string>{"lobby"});
  // A room of its own (the general chat, a public room) does not take the comment out of the
  // thread it is posted in; one allowed there keeps its own rooms and borrows none.
  auto own_room = [&](author& who, const test::event_ptr& root, const char* room) {
    return who.sign(1111, at++, {{"h", room}, {"K", "11"}, {"E", protocol::to_hex(root->id)}});
  };
  test::check_outcome(store_one(events, community, own_room(outsider, office_thread, "_")), status::refused,
                      storage::msg_room_restricted);
  test::check_outcome(store_one(events, community, own_room(outsider, office_thread, "lobby")), status::refused,
                      storage::msg_room_restricted);
  auto allowed = store_one(events, community, own_room(member, office_thread, "_"));
  test::check_outcome(allowed, status::stored, "");
  CHECK_FALSE(allowed.borrowed_rooms);
  // Leaving the room takes the right away; an import restores what the community held.
  (void)test::scalar(connection, "DELETE FROM room_members WHERE community_id = $1::bigint RETURNING 1", {id});
  test::check_outcome(store_one(events, community, comment(member, office_thread)), status::refused,
                storage::msg_room_restricted);
  auto imported = test::write_of(community, comment(outsider, office_thread));
  imported.recheck_access = false;
  auto restored = events.store_batch(std::vector{imported});
  REQUIRE(restored.size() == 1);
  test::check_outcome(restored[0], status::stored, "");
}

TEST_CASE_METHOD(test::store_fixture, "a report borrows the rooms of what it reports, whoever reports it",
                 "[integration][event_store][rooms]") {
  author member{15}, outsider{16};
  (void)test::scalar(connection, "INSERT INTO rooms (community_id, room_id, restricted) VALUES ($1::bigint, 'office', true)",
                     {std::to_string(community)});
  auto memo = member.sign(9, now - 10, {{"h", "office"}});
  auto note = member.sign(1, now - 9);
  for (const auto& ev : {memo, note})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  auto report_of = [&](const test::event_ptr& reported, std::int64_t at) {
    return outsider.sign(1984, at, {{"p", protocol::to_hex(member.pubkey())}, {"e", protocol::to_hex(reported->id), "spam"}});
  };
  // Reporting is not posting: the restricted room does not refuse an outsider's report.
  auto of_memo = report_of(memo, now - 8);
  auto of_note = report_of(note, now - 7);
  auto stored = store_one(events, community, of_memo);
  test::check_outcome(stored, status::stored, "");
  CHECK(stored.borrowed_rooms == std::vector<std::string>{"office"});
  REQUIRE(store_one(events, community, of_note).result == status::stored);

  protocol::filter reports;
  reports.kinds = std::vector<std::uint32_t>{1984};
  auto read = [&](const protocol::room_hiding& hiding) {
    auto result = events.query_chunks(community, {reports}, now, 100, 1 << 20, [](storage::query_result) { return true; },
                                      {}, hiding);
    REQUIRE(result.ok);
    auto counted = events.count(community, {reports}, now, hiding);
    REQUIRE(counted.ok);
    CHECK(counted.count == result.events.size());
    return result.events;
  };
  CHECK(read({}) == jsons_of({of_note, of_memo}));
  protocol::room_hiding office_unseen;
  office_unseen.unseen = {"office"};
  CHECK(read(office_unseen) == jsons_of({of_note}));
  // Its room rows go with it (the deletion borrows the office in turn).
  auto deletion = outsider.sign(5, now - 1, {{"e", protocol::to_hex(of_memo->id)}});
  REQUIRE(store_one(events, community, deletion).result == status::stored);
  CHECK(test::scalar(connection, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint AND name = 'room'"
                                 " AND kind <> 5",
                     {std::to_string(community)}) == "0");
}

TEST_CASE_METHOD(test::store_fixture,
                 "a report of a comment borrows the rooms the comment borrowed; a zap receipt those of"
                 " what was zapped",
                 "[integration][event_store][rooms]") {
  author member{17}, outsider{18}, lightning{19};
  const std::string id = std::to_string(community);
  (void)test::scalar(connection, "INSERT INTO rooms (community_id, room_id) VALUES ($1::bigint, 'office')"
                                 " RETURNING 1", {id});
  auto memo = member.sign(9, now - 10, {{"h", "office"}});
  REQUIRE(store_one(events, community, memo).result == status::stored);
  const auto memo_hex = protocol::to_hex(memo->id);
  auto reply = member.sign(1111, now - 9, {{"K", "9"}, {"E", memo_hex}, {"e", memo_hex}});
  auto stored_reply = store_one(events, community, reply);
  REQUIRE(stored_reply.result == status::stored);
  REQUIRE(stored_reply.borrowed_rooms == std::vector<std::string>{"office"});
  // What Flotilla's makeReport sends of the comment (no h), and what a Lightning service
  // publishes for a zap of the memo (no h: it knows no rooms).
  auto report = outsider.sign(1984, now - 8, {{"p", protocol::to_hex(member.pubkey())},
                                              {"e", protocol::to_hex(reply->id), "spam"}});
  auto receipt = lightning.sign(9735, now - 7, {{"p", protocol::to_hex(member.pubkey())}, {"e", memo_hex},
                                                {"bolt11", "lnbc1"}, {"description", "{}"}});
  for (const auto& ev : {report, receipt}) {
    auto stored = store_one(events, community, ev);
    REQUIRE(stored.result == status::stored);
    CHECK(stored.borrowed_rooms == std::vector<std::string>{"office"});
  }
  protocol::filter about_the_memo;
  about_the_memo.kinds = std::vector<std::uint32_t>{1984, 9735};
  protocol::room_hiding office_unseen;
  office_unseen.unseen = {"office"};
  for (const auto& hiding : {protocol::room_hiding{}, office_unseen}) {
    auto result = events.query_chunks(community, {about_the_memo}, now, 100, 1 << 20,
                                      [](storage::query_result) { return true; }, {}, hiding);
    REQUIRE(result.ok);
    CHECK(result.events.size() == (hiding.unseen.empty() ? 2U : 0U));
    auto counted = events.count(community, {about_the_memo}, now, hiding);
    REQUIRE(counted.ok);
    CHECK(counted.count == result.events.size());
  }
}

TEST_CASE_METHOD(test::store_fixture,
                 "a post into a restricted room is checked against the database's room members, not"
                 " only the pod's cache",
                 "[integration][event_store][rooms]") {
  author member{20}, removed{21}, admin{22};
  const std::string id = std::to_string(community);
  (void)test::scalar(connection, "INSERT INTO rooms (community_id, room_id, restricted) VALUES ($1::bigint, 'office', true)"
                                 " RETURNING 1", {id});
  office_with(*this, member, admin);
  // The pod admitted each into the room (write_of takes its h as admitted): the removed member's
  // pod had not heard of the removal yet.
  auto post = [&](author& who, std::uint32_t kind, std::vector<protocol::tag> tags) {
    tags.push_back({"h", "office"});
    auto write = test::write_of(community, who.sign(kind, now - 5, std::move(tags)));
    write.rooms = {"office"};
    auto outcomes = events.store_batch(std::vector{write});
    REQUIRE(outcomes.size() == 1);
    return outcomes[0];
  };
  test::check_outcome(post(member, 9, {}), status::stored, "");
  test::check_outcome(post(admin, 9, {}), status::stored, "");
  test::check_outcome(post(removed, 9, {}), status::refused, storage::msg_room_restricted);
  // An import restores what the community held.
  auto earlier = removed.sign(9, now - 4, {{"h", "office"}});
  auto imported = test::write_of(community, earlier);
  imported.rooms = {"office"};
  imported.recheck_access = false;
  test::check_outcome(events.store_batch(std::vector{imported}).at(0), status::stored, "");
  // A deletion is not posting: someone who left deletes what they posted there.
  test::check_outcome(post(removed, 5, {{"e", protocol::to_hex(earlier->id)}}), status::stored, "");
  // Whoever reads a room reacts in it: anyone where outsiders read, only members where not.
  test::check_outcome(post(removed, 7, {{"e", protocol::to_hex(earlier->id)}}), status::stored, "");
  (void)test::scalar(connection, "UPDATE rooms SET private = true WHERE room_id = 'office' RETURNING 1");
  test::check_outcome(post(removed, 7, {{"e", protocol::to_hex(earlier->id)}, {"k", "9"}}), status::refused,
                      storage::msg_room_restricted);
  test::check_outcome(post(member, 7, {{"e", protocol::to_hex(earlier->id)}}), status::stored, "");
}

TEST_CASE_METHOD(test::store_fixture, "an edit that leaves out the h of a room's calendar event keeps its rooms",
                 "[integration][event_store][rooms]") {
  // Flotilla's calendar edit republishes the 31923 with its d and without its h.
  author alice{12};
  auto posted = alice.sign(31923, now - 10, {{"d", "picnic"}, {"h", "kitchen"}});
  REQUIRE(store_one(events, community, posted).result == status::stored);
  auto edited = alice.sign(31923, now - 5, {{"d", "picnic"}}, "moved to noon");
  auto again = alice.sign(31923, now - 3, {{"d", "picnic"}}, "and to one");
  auto profile = alice.sign(0, now - 3);
  std::vector writes{test::write_of(community, edited), test::write_of(community, again),
                     test::write_of(community, profile)};
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 3);
  CHECK(outcomes[0].borrowed_rooms == std::vector<std::string>{"kitchen"});
  CHECK(outcomes[1].borrowed_rooms == std::vector<std::string>{"kitchen"}); // from the one before, in the batch
  CHECK_FALSE(outcomes[2].borrowed_rooms);

  protocol::filter calendar;
  calendar.kinds = std::vector<std::uint32_t>{31923};
  protocol::room_hiding kitchen_unseen;
  kitchen_unseen.unseen = {"kitchen"};
  auto read = [&](const protocol::room_hiding& hiding) {
    std::vector<std::string> got;
    auto keep = [&](storage::query_result chunk) {
      got.insert(got.end(), chunk.events.begin(), chunk.events.end());
      return true;
    };
    auto rest = events.query_chunks(community, {calendar}, now, 10, 1 << 20, keep, false, hiding);
    REQUIRE(rest.ok);
    got.insert(got.end(), rest.events.begin(), rest.events.end());
    auto counted = events.count(community, {calendar}, now, hiding);
    REQUIRE(counted.ok);
    CHECK(counted.count == got.size());
    return got;
  };
  CHECK(read({}) == jsons_of({again}));
  CHECK(read(kitchen_unseen).empty());
  // Stored anew it borrows from what it replaced; one with an h of its own is in that room.
  auto moved = alice.sign(31923, now - 1, {{"d", "picnic"}, {"h", "pantry"}});
  auto stored = store_one(events, community, moved);
  REQUIRE(stored.result == status::stored);
  CHECK_FALSE(stored.borrowed_rooms);
  CHECK(read(kitchen_unseen) == jsons_of({moved}));
}

TEST_CASE_METHOD(test::store_fixture, "an edit that keeps a restricted room is refused to someone no longer allowed to post there",
                 "[integration][event_store][rooms]") {
  author member{15}, admin{16};
  const std::string id = std::to_string(community);
  (void)test::scalar(connection, "INSERT INTO rooms (community_id, room_id, restricted) VALUES"
                                 " ($1::bigint, 'office', true) RETURNING 1", {id});
  office_with(*this, member, admin);
  auto posted = member.sign(31923, now - 10, {{"d", "standup"}, {"h", "office"}});
  REQUIRE(store_one(events, community, posted).result == status::stored);
  auto edit = member.sign(31923, now - 8, {{"d", "standup"}}, "at ten");
  auto kept = store_one(events, community, edit);
  test::check_outcome(kept, status::stored, "");
  CHECK(kept.borrowed_rooms == std::vector<std::string>{"office"});
  auto room_rows = [&](const test::event_ptr& ev) {
    return test::scalar(connection, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint"
                                    " AND name = 'room' AND event_id = decode($2, 'hex')",
                        {id, protocol::to_hex(ev->id)});
  };
  CHECK(room_rows(edit) == "1");
  (void)test::scalar(connection, "DELETE FROM room_members WHERE community_id = $1::bigint RETURNING 1", {id});
  test::check_outcome(store_one(events, community, member.sign(31923, now - 6, {{"d", "standup"}}, "at eleven")),
                      status::refused, storage::msg_room_restricted);
  // Replaced, the version's room rows go with it (migration 35).
  auto by_admin_edit = member.sign(31923, now - 4, {{"d", "standup"}, {"h", "_"}});
  auto imported = test::write_of(community, by_admin_edit);
  imported.recheck_access = false; // an import restores what the community held
  std::vector writes{imported};
  REQUIRE(events.store_batch(writes).at(0).result == status::stored);
  CHECK(room_rows(edit) == "0");
}
