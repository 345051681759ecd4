// SPDX-License-Identifier: MIT
// The community actor's room requests: one transaction at a time per community, one room's
// waiting requests together, waits for the clock, bounds (community_fixture.hpp).
#include "community_fixture.hpp"

using namespace comb;
using namespace comb::actors;
using namespace comb::test_community;

TEST_CASE_METHOD(fixture, "room requests of different rooms go one transaction at a time, the cache has the room before the reply",
                 "[actor][community][rooms]") {
  queue_room(1, "pizza");
  scheduler->run_once();
  queue_room(2, "pasta");
  scheduler->run();
  CHECK(db->room_requests == std::vector<std::string>{"pizza", "pasta"});
  CHECK(seen->room_replies
        == std::vector<std::pair<std::uint64_t, protocol::room_outcome>>{
          {1, protocol::room_outcome::changed}, {2, protocol::room_outcome::changed}});
  CHECK(seen->rooms_known_at_reply == std::vector<std::size_t>{1, 2});
  CHECK(seen->published == 2); // each stored request goes live
  REQUIRE(cache->rooms()->find("pasta"));
  CHECK(cache->rooms()->find("pasta")->flags.is_private);
  CHECK(cache->rooms_version() == cache->version());
}

TEST_CASE_METHOD(fixture, "one room's requests waiting go together in one transaction, in order",
                 "[actor][community][rooms]") {
  auto bob = protocol::key_pair::generate();
  auto carol = protocol::key_pair::generate();
  queue_room(1, "pizza");
  scheduler->run_once(); // under way alone
  queue_room(2, "pizza", "", &bob);
  queue_room(3, "pasta");
  queue_room(4, "pizza", "", &carol);
  queue_room(5, "pizza", "bob again", &bob); // bob is in the batch already: it ends there
  queue_room(6, "pizza");
  scheduler->run();
  CHECK(db->room_batches == std::vector<std::size_t>{1, 2, 1, 2});
  CHECK(db->room_requests == std::vector<std::string>{"pizza", "pizza", "pizza", "pasta", "pizza", "pizza"});
  using room_reply = std::pair<std::uint64_t, protocol::room_outcome>;
  const auto changed = protocol::room_outcome::changed;
  CHECK(seen->room_replies
        == std::vector<room_reply>{{1, changed}, {2, changed}, {4, changed}, {3, changed}, {5, changed}, {6, changed}});
  CHECK(seen->published == 6);
}

TEST_CASE_METHOD(fixture, "a room request that must wait is sent again in the next second",
                 "[actor][community][rooms]") {
  db->room_wait = 0;
  queue_room(1, "pizza");
  scheduler->run();
  CHECK(seen->room_replies.empty());
  CHECK(db->room_requests.empty());
  scheduler->trigger_timeouts();
  scheduler->run();
  CHECK(db->room_requests == std::vector<std::string>{"pizza"});
  CHECK(seen->room_replies.size() == 1);
}

TEST_CASE_METHOD(fixture, "rooms follow membership writes: rewritten rooms replace, others stay current",
                 "[actor][community][rooms]") {
  queue_room(1, "pizza");
  scheduler->run();
  REQUIRE(cache->rooms()->size() == 1);
  // A write that started from the rooms' version leaves them current at its own.
  queue(2, cmd(membership_change::add_member, 2));
  scheduler->run();
  CHECK(cache->rooms_version() == cache->version());
  CHECK(cache->rooms()->size() == 1);
  // A state the cache missed (another pod's write) leaves the rooms behind until a reload.
  ++db->version;
  queue(3, cmd(membership_change::add_member, 3));
  scheduler->run();
  CHECK(cache->rooms_version() < cache->version());
  // A write that removed members from rooms carries them.
  db->remove_from_rooms = true;
  queue(4, cmd(membership_change::remove_member, 3));
  scheduler->run();
  CHECK(cache->rooms_version() == cache->version());
  CHECK(cache->rooms()->size() == 0);
}

TEST_CASE_METHOD(fixture, "room requests waiting are bounded in bytes as well as in count",
                 "[actor][community][bounds]") {
  db->room_wait = 0; // the first request waits for the next second: the queue fills
  const std::string large(1024 * 1024, 'x');
  const std::size_t fit = max_queued_room_bytes / (2 * large.size() + 1024);
  for (std::uint64_t ticket = 1; ticket <= fit + 3; ++ticket)
    queue_room(ticket, "pizza", large);
  scheduler->run();
  using room_reply = std::pair<std::uint64_t, protocol::room_outcome>;
  const auto busy = protocol::room_outcome::busy;
  CHECK(seen->room_replies == std::vector<room_reply>{{fit + 1, busy}, {fit + 2, busy}, {fit + 3, busy}});
  auto refused = seen->room_replies.size();
  scheduler->trigger_timeouts();
  scheduler->run();
  CHECK(seen->room_replies.size() == fit + 3); // the ones held were answered in turn
  CHECK(std::count_if(seen->room_replies.begin(), seen->room_replies.end(), [](const auto& reply) {
          return reply.second == protocol::room_outcome::busy;
        }) == static_cast<std::ptrdiff_t>(refused));
}
