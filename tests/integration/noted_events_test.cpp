// SPDX-License-Identifier: MIT
// The events an access change wrote, recorded by version (note_access_change, noted_events): a
// change of any size is loadable whole, a page at a time, and a reader that missed a version
// (its notification was lost) gets it with the next one; old records are pruned.
#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "storage/access_change.hpp"
#include "storage/community_store.hpp"
#include "support/room_fixture.hpp"

using namespace comb;
using namespace comb::test;
using storage::lifecycle_result;

namespace {

constexpr int rooms_count = 60;

/// `rooms_count` rooms, each with bob (not a community member) as its moderator: closing the
/// community rewrites 39001 and 39002 of every room, 120 events in one change.
struct many_rooms_fixture : room_fixture {
  many_rooms_fixture() {
    for (int i = 0; i < rooms_count; ++i) {
      auto room = "room-" + std::to_string(i);
      REQUIRE(paced_room(rooms, community, room_command(owner, 9007, {{"h", room}}, now), now).committed);
      REQUIRE(paced_room(rooms, community,
                         room_command(owner, 9000, {{"h", room}, {"p", bob.pubkey_hex(), "moderator"}}, now),
                         now)
                .committed);
    }
  }

  /// Closes the community at the first second every room's state allows.
  storage::access_switch close() {
    for (;;) {
      auto out = communities.set_access(community, true, relay_key, now);
      if (out.retry_at == 0)
        return out;
      now = out.retry_at;
    }
  }

  std::int64_t version() {
    return std::stoll(count("SELECT state_version FROM communities WHERE id = $1::bigint"));
  }

  /// Every recorded event after version `after` through `through`, `page` at a time.
  std::vector<std::string> read_all(std::int64_t after, std::int64_t through, int page) {
    storage::noted_position at{after, std::numeric_limits<std::int64_t>::max()};
    std::vector<std::string> out;
    for (;;) {
      auto rows = storage::load_noted_events(connection, community, at, through, page);
      REQUIRE(rows);
      for (auto& row : *rows) {
        CHECK(row.at.version > after);
        CHECK(row.at.version <= through);
        at = row.at;
        out.push_back(std::move(row.raw));
      }
      if (rows->size() < static_cast<std::size_t>(page))
        return out;
    }
  }
};

std::vector<std::string> jsons(const std::vector<storage::relay_signed_event>& events) {
  std::vector<std::string> out;
  for (const auto& ev : events)
    out.push_back(ev.json);
  return out;
}

} // namespace

TEST_CASE_METHOD(many_rooms_fixture, "every event of a change writing more than 100 is loadable by its version",
                 "[integration][authority]") {
  auto before = version();
  auto closed = close();
  INFO(communities.last_error());
  REQUIRE(closed.result == lifecycle_result::changed);
  REQUIRE(closed.room_events.size() == 2 * rooms_count);
  // The change committed at `after` (its own statements bump the version too, as a hand edit
  // would); every event it wrote is recorded under that version and none under another.
  auto after = version();
  CHECK(after > before);
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint AND version = "
              + std::to_string(after))
        == std::to_string(2 * rooms_count));
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint AND version > "
              + std::to_string(before))
        == std::to_string(2 * rooms_count));

  // By pages of the relay's size and of an odd size: the same events, in the order written.
  CHECK(read_all(before, after, storage::noted_events_page) == jsons(closed.room_events));
  CHECK(read_all(before, after, 7) == jsons(closed.room_events));
  // Nothing after the change; through the version before it, none of its events.
  CHECK(read_all(after, after + 10, 100).empty());
  auto earlier = read_all(0, before, 1000);
  CHECK_FALSE(earlier.empty()); // the rooms' creation
  for (const auto& json : jsons(closed.room_events))
    CHECK(std::find(earlier.begin(), earlier.end(), json) == earlier.end());
}

TEST_CASE_METHOD(many_rooms_fixture, "a reader that missed a version gets its events with the next",
                 "[integration][authority]") {
  auto seen = version();
  auto closed = close(); // the notification of this version is lost
  REQUIRE(closed.result == lifecycle_result::changed);
  ++now;
  auto added = apply(command(storage::membership_change::add_member, carol.pubkey()));
  REQUIRE(added.committed);
  REQUIRE(added.list);
  auto latest = version();
  CHECK(latest > seen + 1);

  // What a pod reads when it hears of `latest` after `seen`: both changes, in version order.
  auto expected = jsons(closed.room_events);
  expected.push_back(added.list_json);
  expected.push_back(added.results[0].delta_json);
  CHECK(read_all(seen, latest, storage::noted_events_page) == expected);
}

TEST_CASE_METHOD(many_rooms_fixture, "records older than the retention go with the community's next change",
                 "[integration][authority]") {
  auto before = version();
  REQUIRE(close().result == lifecycle_result::changed);
  auto closed_at = version();
  auto total = count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint");
  CHECK(std::stoll(total) > 2 * rooms_count);
  // Everything recorded so far is older than the retention; the close itself is not.
  (void)scalar(connection, "UPDATE noted_events SET noted_at = now() - interval '2 hours'"
                           " WHERE version <= " + std::to_string(before));
  ++now;
  REQUIRE(apply(command(storage::membership_change::add_member, carol.pubkey())).committed);
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint AND version <= "
              + std::to_string(before))
        == "0");
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint AND version = "
              + std::to_string(closed_at))
        == std::to_string(2 * rooms_count));
  // A deleted community takes its records with it.
  REQUIRE(communities.remove(community) == lifecycle_result::changed);
  CHECK(count("SELECT count(*) FROM noted_events WHERE community_id = $1::bigint") == "0");
}
