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

TEST_CASE_METHOD(fixture, "a room change whose state could not be read after its commit waits for the reload "
                 "to go live here", "[actor][community][rooms]") {
  db->room_state_unread = true;
  queue_room(1, "pizza");
  scheduler->run();
  // Answered (it committed), but the cache does not hold it: its events would go out under the
  // rooms as they were before; the access watcher delivers them after it reloads.
  CHECK(seen->room_replies
        == std::vector<std::pair<std::uint64_t, protocol::room_outcome>>{{1, protocol::room_outcome::changed}});
  CHECK_FALSE(cache->rooms()->find("pizza"));
  CHECK(seen->published == 0);
  db->room_state_unread = false;
  queue_room(2, "pasta");
  scheduler->run();
  CHECK(seen->published == 1);
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
  for (std::uint64_t ticket = 1; ticket <= fit + 3; ++ticket) {
    auto someone = protocol::key_pair::generate(); // one person's own requests have a bound of their own
    queue_room(ticket, "pizza", large, &someone);
  }
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

TEST_CASE_METHOD(fixture, "a room waiting for the next second holds only its own requests",
                 "[actor][community][rooms]") {
  db->room_wait = 0;
  queue_room(1, "pizza");
  queue_room(2, "pasta");
  queue_room(3, "pizza", "after the first");
  scheduler->run();
  using room_reply = std::pair<std::uint64_t, protocol::room_outcome>;
  const auto changed = protocol::room_outcome::changed;
  CHECK(seen->room_replies == std::vector<room_reply>{{2, changed}});
  scheduler->trigger_timeouts();
  scheduler->run();
  CHECK(seen->room_replies == std::vector<room_reply>{{2, changed}, {1, changed}, {3, changed}});
  CHECK(db->room_requests == std::vector<std::string>{"pasta", "pizza", "pizza"});
}

TEST_CASE_METHOD(fixture, "one person's own room joins and leaves waiting are bounded, not an admin's",
                 "[actor][community][rooms][bounds]") {
  db->room_wait = 0; // the first waits for the next second: the rest stay queued
  std::uint64_t ticket = 1;
  for (; ticket <= max_queued_per_member; ++ticket)
    queue_room(ticket, "pizza", std::to_string(ticket), nullptr,
               ticket % 2 == 1 ? protocol::room_join_kind : protocol::room_leave_kind);
  queue_room(ticket, "pasta", "another room, the same person");
  for (std::uint64_t edit = 1; edit <= max_queued_per_member + 1; ++edit)
    queue_room(ticket + edit, "pizza", std::to_string(edit), nullptr, protocol::room_edit_metadata_kind);
  scheduler->run();
  using room_reply = std::pair<std::uint64_t, protocol::room_outcome>;
  CHECK(seen->room_replies == std::vector<room_reply>{{ticket, protocol::room_outcome::busy}});
}

TEST_CASE_METHOD(fixture, "joins and leaves fill only their lane of the room queue: an admin's request still waits its turn",
                 "[actor][community][rooms][bounds]") {
  db->room_wait = 0;
  std::uint64_t ticket = 1;
  for (; ticket <= max_queued_self_requests + 1; ++ticket) {
    auto someone = protocol::key_pair::generate();
    queue_room(ticket, "pizza", "", &someone);
  }
  queue_room(ticket, "pizza", "", nullptr, protocol::room_edit_metadata_kind);
  scheduler->run();
  using room_reply = std::pair<std::uint64_t, protocol::room_outcome>;
  CHECK(seen->room_replies == std::vector<room_reply>{{max_queued_self_requests + 1, protocol::room_outcome::busy}});
  scheduler->trigger_timeouts();
  scheduler->run();
  REQUIRE(seen->room_replies.size() == max_queued_self_requests + 2);
  CHECK(seen->room_replies.back() == room_reply{ticket, protocol::room_outcome::changed});
}

TEST_CASE_METHOD(fixture, "one person's answered room requests, retried or not, free their places",
                 "[actor][community][rooms][bounds]") {
  db->room_wait = 0; // the first batch waits for the next second, then goes
  std::uint64_t ticket = 1;
  auto send_own = [&] {
    for (std::size_t i = 0; i < max_queued_per_member; ++i, ++ticket)
      queue_room(ticket, "pizza", std::to_string(ticket), nullptr,
                 ticket % 2 == 1 ? protocol::room_join_kind : protocol::room_leave_kind);
  };
  send_own();
  scheduler->run();
  scheduler->trigger_timeouts();
  scheduler->run();
  send_own();
  scheduler->run();
  REQUIRE(seen->room_replies.size() == 2 * max_queued_per_member);
  CHECK(std::ranges::none_of(seen->room_replies, [](const auto& reply) {
    return reply.second == protocol::room_outcome::busy;
  }));
}
