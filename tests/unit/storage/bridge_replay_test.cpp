// SPDX-License-Identifier: MIT
// The replay guard: a captured envelope, replayed inside the skew window, is refused after the
// receiving pod restarted and after its memory of envelopes rolled over.
#include <algorithm>
#include <catch2/catch.hpp>

#include "storage/bridge_envelope.hpp"
#include "storage/bridge_replay.hpp"

using namespace comb;
using storage::replay_verdict;

namespace {

protocol::bytes32 id_of(std::uint32_t n) {
  protocol::bytes32 id{};
  for (std::size_t i = 0; i < 4; ++i)
    id[i] = static_cast<std::uint8_t>(n >> (8 * i));
  return id;
}

constexpr std::int64_t start = 1'800'000'000'000;

} // namespace

TEST_CASE("an envelope is delivered once; the same event in another community is another",
          "[bridge]") {
  storage::replay_guard guard(start);
  CHECK(guard.admit(1, id_of(1), start + 10, start + 20) == replay_verdict::fresh);
  CHECK(guard.admit(1, id_of(1), start + 10, start + 30) == replay_verdict::seen);
  CHECK(guard.admit(1, id_of(1), start + 15, start + 30) == replay_verdict::seen); // re-sent
  CHECK(guard.admit(2, id_of(1), start + 10, start + 30) == replay_verdict::fresh);
}

TEST_CASE("after a restart, an envelope sent before the pod started is refused", "[bridge]") {
  // The pod saw the envelope, restarted (an empty memory), and the capture comes again within
  // the minute the staleness check allows.
  storage::replay_guard before_restart(start);
  CHECK(before_restart.admit(1, id_of(7), start + 1'000, start + 1'010) == replay_verdict::fresh);
  storage::replay_guard after_restart(start + 5'000);
  CHECK(after_restart.admit(1, id_of(7), start + 1'000, start + 6'000)
        == replay_verdict::before_start);
  CHECK(after_restart.admit(1, id_of(8), start + 5'000, start + 6'000) == replay_verdict::fresh);
}

TEST_CASE("a full memory raises a floor instead of forgetting a young envelope", "[bridge]") {
  storage::replay_guard guard(start, 3);
  const std::int64_t now = start + 10'000;
  for (std::uint32_t n = 1; n <= 3; ++n)
    CHECK(guard.admit(1, id_of(n), start + n, now) == replay_verdict::fresh);
  CHECK(guard.floor_raises() == 0);
  // The fourth forgets the first, which is only seconds old: its replay must still fail.
  CHECK(guard.admit(1, id_of(4), start + 4, now) == replay_verdict::fresh);
  CHECK(guard.floor_raises() == 1);
  CHECK(guard.floor() == start + 1);
  CHECK(guard.admit(1, id_of(1), start + 1, now + 1) == replay_verdict::below_floor);
  // Remembered ones are still recognized, newer ones still pass.
  CHECK(guard.admit(1, id_of(3), start + 3, now + 1) == replay_verdict::seen);
  CHECK(guard.admit(1, id_of(5), start + 5, now + 1) == replay_verdict::fresh);
  CHECK(guard.size() == 3);
}

TEST_CASE("envelopes older than the skew window are forgotten without raising the floor",
          "[bridge]") {
  storage::replay_guard guard(start, 2);
  CHECK(guard.admit(1, id_of(1), start + 1, start + 2) == replay_verdict::fresh);
  CHECK(guard.admit(1, id_of(2), start + 2, start + 3) == replay_verdict::fresh);
  const std::int64_t later = start + storage::envelope_max_skew_ms + 10;
  CHECK(guard.admit(1, id_of(3), later - 5, later) == replay_verdict::fresh);
  CHECK(guard.floor_raises() == 0);
  CHECK(guard.size() == 1);
}

TEST_CASE("at a sustained rate above the memory, no replay of a young envelope passes",
          "[bridge]") {
  // 1,000 envelopes a second for two minutes through a memory of 5,000 ids (5 s of traffic):
  // every envelope, replayed at any time within the window, is refused.
  storage::replay_guard guard(start, 5'000);
  std::uint32_t n = 0;
  for (std::int64_t at = start; at < start + 120'000; ++at, ++n) {
    REQUIRE(guard.admit(1, id_of(n), at, at) == replay_verdict::fresh);
    if (n >= 1'000 && n % 97 == 0) { // replay one sent up to a minute ago
      const std::uint32_t old = n - 1 - (n * 7'919u) % std::min<std::uint32_t>(n, 59'000);
      REQUIRE(guard.admit(1, id_of(old), start + old, at) != replay_verdict::fresh);
    }
  }
  CHECK(guard.floor_raises() > 0);
  CHECK(guard.size() <= 5'000);
}
