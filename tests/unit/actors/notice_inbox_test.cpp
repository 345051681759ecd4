// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <string>

#include "actors/community/notice_inbox.hpp"

using comb::actors::notice_inbox;

TEST_CASE("notifications wait coalesced, one wake-up for many", "[actors][notices]") {
  notice_inbox inbox;
  CHECK(inbox.add("7 10 +"));      // wakes the watcher
  CHECK_FALSE(inbox.add("7 12 +")); // already woken
  CHECK_FALSE(inbox.add("7 11"));   // older, and wrote nothing: the hosts must be forgotten
  CHECK_FALSE(inbox.add("8 3 +"));
  CHECK_FALSE(inbox.add("not ours"));
  auto batch = inbox.take();
  CHECK(batch.received == 5);
  CHECK_FALSE(batch.overflowed);
  REQUIRE(batch.notices.size() == 2);
  for (const auto& notice : batch.notices) {
    if (notice.community_id == 7) {
      CHECK(notice.version == 12);
      CHECK_FALSE(notice.wrote_events);
    } else {
      CHECK(notice.community_id == 8);
      CHECK(notice.version == 3);
      CHECK(notice.wrote_events);
    }
  }
  CHECK(inbox.add("7 13 +")); // taken: the next one wakes it again
}

TEST_CASE("a flood of notifications for made-up communities is bounded", "[actors][notices][bounds]") {
  notice_inbox inbox;
  for (std::size_t i = 1; i <= notice_inbox::max_pending + 10; ++i)
    (void)inbox.add(std::to_string(i) + " 1");
  auto batch = inbox.take();
  CHECK(batch.notices.size() == notice_inbox::max_pending);
  CHECK(batch.overflowed); // the watcher checks every community's version instead
  CHECK(batch.received == notice_inbox::max_pending + 10);
  CHECK_FALSE(inbox.take().overflowed);
}
