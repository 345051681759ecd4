// SPDX-License-Identifier: MIT
// What a reader's room hiding leaves out of the SQL's rows, before a limit or a COUNT counts them.
#include <catch2/catch.hpp>

#include "protocol/hex.hpp"
#include "protocol/room.hpp"
#include "storage/store_plan.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::jsons_of;
using comb::test::store_one;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

/// Adds `room` to the fixture's community with each of `flags` (a boolean column of `rooms`)
/// set, and `members` in it.
void add_room(test::store_fixture& store, const std::string& room, const std::vector<std::string>& flags,
              const std::vector<const author*>& members = {}) {
  const std::string community = std::to_string(store.community);
  std::string columns, values;
  for (const auto& flag : flags) {
    columns += ", " + flag;
    values += ", true";
  }
  (void)test::scalar(store.connection, "INSERT INTO rooms (community_id, room_id" + columns
                                         + ") VALUES ($1::bigint, $2" + values + ") RETURNING 1",
                     {community, room});
  for (const auto* member : members)
    (void)test::scalar(store.connection, "INSERT INTO room_members (community_id, room_id, pubkey)"
                                         " VALUES ($1::bigint, $2, decode($3, 'hex')) RETURNING 1",
                       {community, room, protocol::to_hex(member->pubkey())});
}

/// The events a reader with `hiding` gets for `f` from the fixture's community, newest first.
std::vector<std::string> read_as(test::store_fixture& store, const protocol::filter& f,
                                 const protocol::room_hiding& hiding) {
  auto result = store.events.query_chunks(store.community, {f}, now, 100, 1 << 20,
                                          [](storage::query_result) { return true; }, {}, hiding);
  REQUIRE(result.ok);
  return result.events;
}

} // namespace

TEST_CASE_METHOD(test::store_fixture,
                 "rows naming a room the reader's pod does not know are left out before the limit counts",
                 "[integration][event_store][rooms]") {
  author alice{31}, bob{32};
  // "fresh" was created on another pod, and this pod has not loaded it yet: it may be private.
  std::vector<test::event_ptr> lobby;
  for (int i = 0; i < 3; ++i)
    lobby.push_back(alice.sign(9, now - 100 + i, {{"h", "lobby"}}));
  auto general = alice.sign(9, now - 90, {{"h", std::string(protocol::general_room)}});
  auto fresh_thread = bob.sign(11, now - 60, {{"h", "fresh"}});
  std::vector<test::event_ptr> fresh{bob.sign(9, now - 50, {{"h", "fresh"}}), bob.sign(9, now - 49, {{"h", "fresh"}})};
  auto lobby_thread = alice.sign(11, now - 40, {{"h", "lobby"}});
  auto on_fresh = alice.sign(1111, now - 30, {{"K", "11"}, {"E", protocol::to_hex(fresh_thread->id)}});
  auto on_lobby = alice.sign(1111, now - 29, {{"K", "11"}, {"E", protocol::to_hex(lobby_thread->id)}});
  // A room deleted on another pod: its deletion is how readers learn it went.
  auto gone = bob.sign(protocol::room_delete_kind, now - 20, {{"h", "gone"}});
  for (const auto& ev : lobby)
    REQUIRE(store_one(events, community, ev).result == status::stored);
  for (const auto& ev : {general, fresh_thread, fresh[0], fresh[1], lobby_thread, on_fresh, on_lobby, gone})
    REQUIRE(store_one(events, community, ev).result == status::stored);

  auto read = [&](const protocol::filter& f, const protocol::room_hiding& hiding) { return read_as(*this, f, hiding); };
  auto count = [&](const protocol::filter& f, const protocol::room_hiding& hiding) {
    auto counted = events.count(community, {f}, now, hiding);
    REQUIRE(counted.ok);
    return counted.count;
  };
  protocol::filter posts;
  posts.kinds = std::vector<std::uint32_t>{9};
  posts.limit = 2;
  protocol::filter comments;
  comments.kinds = std::vector<std::uint32_t>{1111};
  protocol::filter deletions;
  deletions.kinds = std::vector<std::uint32_t>{protocol::room_delete_kind};

  protocol::room_hiding outsider; // reads the public lobby, knows no other room
  outsider.codes_hidden = {"lobby"};
  outsider.unknown_hidden = true;
  CHECK(read(posts, outsider) == jsons_of({general, lobby[2]}));
  CHECK(count(posts, outsider) == 4);
  CHECK(read(comments, outsider) == jsons_of({on_lobby}));
  CHECK(count(comments, outsider) == 1);
  CHECK(read(deletions, outsider) == jsons_of({gone}));

  // Once loaded here, the room shows as its flags say: a public one whole.
  protocol::room_hiding loaded = outsider;
  loaded.codes_hidden.push_back("fresh");
  CHECK(read(posts, loaded) == jsons_of({fresh[1], fresh[0]}));
  CHECK(count(posts, loaded) == 6);
  CHECK(count(comments, loaded) == 2);
  // Listed as the reader's to read whole (its admin), it shows too.
  protocol::room_hiding led = outsider;
  led.whole = {"fresh"};
  CHECK(count(posts, led) == 6);
  CHECK(count(comments, led) == 2);
  // A hiding that does not hide unknown rooms (a pod that knows no room) shows them.
  protocol::room_hiding none;
  CHECK(read(posts, none) == jsons_of({fresh[1], fresh[0]}));
  CHECK(count(comments, none) == 2);
}

TEST_CASE_METHOD(test::store_fixture,
                 "a room change naming the reader shows them whatever its room hides, but a room not known here",
                 "[integration][event_store][rooms]") {
  author relay{33}, reader{34};
  const std::string me = protocol::to_hex(reader.pubkey());
  auto into_office = relay.sign(9000, now - 20, {{"h", "office"}, {"p", me}});
  auto into_fresh = relay.sign(9000, now - 10, {{"h", "fresh"}, {"p", me}});
  for (const auto& ev : {into_office, into_fresh})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  protocol::filter joins;
  joins.kinds = std::vector<std::uint32_t>{9000};
  protocol::room_hiding hiding; // "office" is hidden; "fresh" was made on another pod
  hiding.unseen = {"office"};
  hiding.reader = me;
  hiding.unknown_hidden = true;
  CHECK(read_as(*this, joins, hiding) == jsons_of({into_office}));
  auto counted = events.count(community, {joins}, now, hiding);
  REQUIRE(counted.ok);
  CHECK(counted.count == 1);
}

TEST_CASE_METHOD(test::store_fixture, "an event borrows the rooms of at most 16 rooms' events",
                 "[integration][event_store][rooms]") {
  author alice{33}, bob{34};
  std::vector<test::event_ptr> posts;
  for (int i = 0; i <= 16; ++i) {
    posts.push_back(alice.sign(9, now - 100 + i, {{"h", "room" + std::to_string(i)}}));
    REQUIRE(store_one(events, community, posts.back()).result == status::stored);
  }
  auto report_of = [&](std::size_t count, std::int64_t at) {
    std::vector<std::vector<std::string>> tags;
    for (std::size_t i = 0; i < count; ++i)
      tags.push_back({"e", protocol::to_hex(posts[i]->id)});
    return bob.sign(1984, at, tags);
  };
  // Every live delivery checks each borrowed room for each subscription: 17 are refused.
  test::check_outcome(store_one(events, community, report_of(17, now - 10)), status::refused,
                      storage::msg_borrows_too_many_rooms);
  auto sixteen = store_one(events, community, report_of(16, now - 9));
  test::check_outcome(sixteen, status::stored, "");
  REQUIRE(sixteen.borrowed_rooms);
  CHECK(sixteen.borrowed_rooms->size() == 16);
  // A deletion of its author's posts in 17 rooms is carried out, only not kept.
  std::vector<std::vector<std::string>> all;
  for (const auto& post : posts)
    all.push_back({"e", protocol::to_hex(post->id)});
  test::check_outcome(store_one(events, community, alice.sign(5, now - 8, all)), status::applied,
                      storage::msg_deletion_in_too_many_rooms);
  CHECK(test::scalar(connection, "SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind IN (5, 9)",
                     {std::to_string(community)}) == "0");
}

TEST_CASE_METHOD(test::store_fixture, "a comment naming its root only by address borrows the rooms of its live version",
                 "[integration][event_store][rooms]") {
  author member{35}, outsider{36};
  add_room(*this, "office", {"restricted"}, {&member});
  const std::string plan = "30023:" + protocol::to_hex(member.pubkey()) + ":plan";
  auto comment = [&](author& who, std::int64_t at, const std::string& root) {
    return who.sign(protocol::comment_kind, at, {{"K", "30023"}, {"A", root}, {"P", protocol::to_hex(member.pubkey())}});
  };
  // The article and a comment on it in one batch: the comment finds the article written before it.
  auto article = member.sign(30023, now - 20, {{"d", "plan"}, {"h", "office"}});
  auto first = comment(member, now - 19, plan);
  auto outcomes = events.store_batch(std::vector{test::write_of(community, article), test::write_of(community, first)});
  REQUIRE(outcomes.size() == 2);
  test::check_outcome(outcomes[1], status::stored, "");
  CHECK(outcomes[1].borrowed_rooms == std::vector<std::string>{"office"});
  // Stored apart, from the stored version; someone the restricted room does not let post is refused.
  auto second = store_one(events, community, comment(member, now - 18, plan));
  CHECK(second.borrowed_rooms == std::vector<std::string>{"office"});
  test::check_outcome(store_one(events, community, comment(outsider, now - 17, plan)), status::refused,
                      storage::msg_room_restricted);
  // A root that is in no room, or is not an address that can be in one, lends none.
  auto public_note = store_one(events, community, comment(outsider, now - 16, "30023:" + std::string(64, 'b') + ":x"));
  test::check_outcome(public_note, status::stored, "");
  CHECK(public_note.borrowed_rooms == std::vector<std::string>{});
  CHECK_FALSE(store_one(events, community, comment(outsider, now - 15, "1:" + protocol::to_hex(member.pubkey()) + ":"))
                .borrowed_rooms);

  protocol::filter comments;
  comments.kinds = std::vector<std::uint32_t>{protocol::comment_kind};
  protocol::room_hiding office_unseen;
  office_unseen.unseen = {"office"};
  auto counted = events.count(community, {comments}, now, office_unseen);
  REQUIRE(counted.ok);
  CHECK(counted.count == 2); // the two on roots in no room
}

TEST_CASE_METHOD(test::store_fixture, "a poll vote or a pin that names only its poll is hidden where the poll "
                 "is, and posts there", "[integration][event_store][rooms]") {
  author alice{35}, bob{36}, outsider{37};
  add_room(*this, "office", {"restricted"}, {&alice, &bob});
  auto poll = alice.sign(1068, now - 20, {{"h", "office"}, {"option", "yes"}});
  auto vote_of = [&](author& who, std::int64_t at) {
    return who.sign(protocol::poll_vote_kind, at, {{"e", protocol::to_hex(poll->id)}, {"response", "yes"}});
  };
  auto vote = vote_of(bob, now - 10);
  // Newer welshman's pin names what it pins by its `e` (and boards by `A`), no `h`.
  auto pin_of = [&](author& who, std::int64_t at) {
    return who.sign(protocol::pin_kind, at, {{"d", "pin-" + std::to_string(at)}, {"e", protocol::to_hex(poll->id)}});
  };
  auto pin = pin_of(bob, now - 8);
  for (const auto& ev : {poll, vote, pin})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  for (const auto& borrower : {vote, pin})
    CHECK(test::scalar(connection, "SELECT string_agg(value, ',') FROM event_tags WHERE name = 'room'"
                                   " AND event_id = decode($1, 'hex')", {protocol::to_hex(borrower->id)}) == "office");
  // Only those who may post in the restricted room vote in its polls; a pin, like a reaction,
  // is not a post.
  test::check_outcome(store_one(events, community, vote_of(outsider, now - 9)), status::refused,
                      storage::msg_room_restricted);
  protocol::filter votes;
  votes.kinds = std::vector<std::uint32_t>{protocol::poll_vote_kind, protocol::pin_kind};
  auto read = [&](const protocol::room_hiding& hiding) { return read_as(*this, votes, hiding); };
  protocol::room_hiding unseen;
  unseen.unseen = {"office"};
  CHECK(read(unseen).empty());
  CHECK(events.count(community, {votes}, now, unseen).count == 0);
  CHECK(read(protocol::room_hiding{}) == jsons_of({pin, vote}));
}

TEST_CASE_METHOD(test::store_fixture, "a pin's new version is in the rooms of what it pins now, not also in "
                 "the last one's", "[integration][event_store][rooms]") {
  author alice{40}, bob{41};
  for (const char* room : {"office", "board"}) {
    add_room(*this, room, {"restricted"}, {&alice, &bob});
  }
  auto in_office = alice.sign(9, now - 30, {{"h", "office"}});
  auto on_board = alice.sign(9, now - 29, {{"h", "board"}});
  auto first = bob.sign(protocol::pin_kind, now - 20, {{"d", "my-pin"}, {"e", protocol::to_hex(in_office->id)}});
  auto second = bob.sign(protocol::pin_kind, now - 10, {{"d", "my-pin"}, {"e", protocol::to_hex(on_board->id)}});
  for (const auto& ev : {in_office, on_board, first, second})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  CHECK(test::scalar(connection, "SELECT string_agg(value, ',') FROM event_tags WHERE name = 'room'"
                                 " AND event_id = decode($1, 'hex')", {protocol::to_hex(second->id)}) == "board");
}

TEST_CASE_METHOD(test::store_fixture, "the batch holds a hidden room to its members as a restricted one, "
                 "whatever the pod's cache let through", "[integration][event_store][rooms]") {
  author alice{38}, outsider{39};
  const std::string id = std::to_string(community);
  // Not restricted: outsiders may not know it exists, so they do not post there either.
  add_room(*this, "den", {"hidden"}, {&alice});
  // As the connection hands them over: admitted into the room its h names.
  auto in_den = [&](const test::event_ptr& ev) {
    auto write = test::write_of(community, ev);
    write.rooms = {"den"};
    std::vector<storage::event_write> writes{write};
    return events.store_batch(writes).at(0);
  };
  auto note = alice.sign(9, now - 20, {{"h", "den"}});
  REQUIRE(in_den(note).result == status::stored);
  test::check_outcome(in_den(outsider.sign(9, now - 19, {{"h", "den"}})), status::refused,
                      storage::msg_room_restricted);
  // Nor by a comment or a reaction that names the member's note without the room's h.
  const auto root = protocol::to_hex(note->id);
  test::check_outcome(store_one(events, community,
                                outsider.sign(protocol::comment_kind, now - 18,
                                              {{"E", root}, {"K", "9"}, {"e", root}, {"k", "9"}})),
                      status::refused, storage::msg_room_restricted);
  test::check_outcome(in_den(outsider.sign(7, now - 17, {{"e", root}, {"h", "den"}})), status::refused,
                      storage::msg_room_restricted);
  CHECK(in_den(alice.sign(7, now - 16, {{"e", root}, {"h", "den"}})).result == status::stored);
  // The community's owner and admins see every room: not in it, they still post there.
  author admin{40};
  (void)test::scalar(connection, "INSERT INTO members (community_id, pubkey, role) VALUES"
                                 " ($1::bigint, decode($2, 'hex'), 'admin') RETURNING 1",
                     {id, protocol::to_hex(admin.pubkey())});
  CHECK(in_den(admin.sign(9, now - 15, {{"h", "den"}})).result == status::stored);
}

TEST_CASE_METHOD(test::store_fixture, "a deletion or a pin that names a private room's calendar event by its "
                 "address only is hidden where the event is", "[integration][event_store][rooms]") {
  author alice{42}, bob{43};
  add_room(*this, "office", {"private", "restricted"}, {&alice});
  const std::string address = "31923:" + protocol::to_hex(alice.pubkey()) + ":offsite";
  auto meeting = alice.sign(31923, now - 30, {{"d", "offsite"}, {"h", "office"}, {"title", "Offsite"}});
  // Anyone who reads the room may pin; the pin and the deletion name the event by `a` only.
  auto pin = bob.sign(protocol::pin_kind, now - 20, {{"d", "pin-1"}, {"a", address}});
  auto deletion = alice.sign(protocol::deletion_kind, now - 10, {{"a", address}, {"k", "31923"}});
  // One with a room of its own is stored in that room only.
  auto in_lobby = bob.sign(protocol::reaction_kind, now - 19, {{"a", address}, {"h", "lobby"}});
  add_room(*this, "lobby", {});
  REQUIRE(store_one(events, community, meeting).result == status::stored);
  for (const auto& borrower : {pin, deletion}) {
    auto stored = store_one(events, community, borrower);
    test::check_outcome(stored, status::stored, "");
    CHECK(stored.borrowed_rooms == std::vector<std::string>{"office"});
  }
  auto lobby = store_one(events, community, in_lobby);
  test::check_outcome(lobby, status::stored, "");
  CHECK_FALSE(lobby.borrowed_rooms);
  CHECK(test::scalar(connection, "SELECT count(*) FROM events WHERE kind = 31923") == "0"); // deleted
  protocol::filter by_address;
  by_address.tags.push_back({'a', {address}});
  auto read = [&](const protocol::room_hiding& hiding) { return read_as(*this, by_address, hiding); };
  protocol::room_hiding unseen;
  unseen.unseen = {"office"};
  CHECK(read(unseen) == jsons_of({in_lobby}));
  CHECK(events.count(community, {by_address}, now, unseen).count == 1);
  CHECK(read(protocol::room_hiding{}) == jsons_of({deletion, in_lobby, pin}));
}

TEST_CASE_METHOD(test::store_fixture, "a deletion by address in the batch that writes its target borrows the "
                 "target's rooms; a pin's edit whose message is gone keeps the pin's", "[integration][event_store][rooms]") {
  author alice{44}, bob{45};
  add_room(*this, "office", {"private"});
  auto meeting = alice.sign(31923, now - 30, {{"d", "offsite"}, {"h", "office"}});
  auto deletion = alice.sign(protocol::deletion_kind, now - 29,
                             {{"a", "31923:" + protocol::to_hex(alice.pubkey()) + ":offsite"}});
  auto outcomes = events.store_batch(std::vector{test::write_of(community, meeting), test::write_of(community, deletion)});
  REQUIRE(outcomes.size() == 2);
  test::check_outcome(outcomes[1], status::stored, "");
  CHECK(outcomes[1].borrowed_rooms == std::vector<std::string>{"office"});
  CHECK(test::scalar(connection, "SELECT count(*) FROM events WHERE kind = 31923") == "0");

  // Bob pins a message of the office; the message goes; his edit of the pin stays in the office.
  auto message = alice.sign(9, now - 20, {{"h", "office"}});
  auto pin = bob.sign(protocol::pin_kind, now - 19, {{"d", "pin-1"}, {"e", protocol::to_hex(message->id)}});
  auto edit = bob.sign(protocol::pin_kind, now - 10,
                       {{"d", "pin-1"}, {"e", protocol::to_hex(message->id)}, {"description", "still"}});
  for (const auto& ev : {message, pin})
    REQUIRE(store_one(events, community, ev).result == status::stored);
  REQUIRE(store_one(events, community, alice.sign(protocol::deletion_kind, now - 15,
                                                  {{"e", protocol::to_hex(message->id)}, {"h", "office"}}))
            .result == status::stored);
  auto edited = store_one(events, community, edit);
  test::check_outcome(edited, status::stored, "");
  CHECK(edited.borrowed_rooms == std::vector<std::string>{"office"});
}
