// SPDX-License-Identifier: MIT
// A gap fill asked again after a failure waits longer each time, up to a ceiling, and starts
// short again once failures stopped for a while.
#include <catch2/catch.hpp>

#include "actors/bridge/fill_backoff.hpp"

using comb::actors::fill_backoff;
using namespace std::chrono_literals;

TEST_CASE("fill retries double from the first wait to the longest", "[bridge][fill]") {
  fill_backoff backoff(1s, 8s);
  auto now = fill_backoff::clock::time_point{} + 1000s;
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 6; ++i) {
    waits.push_back(backoff.next(now));
    now += waits.back() + 5s; // the fill ran, and its events expired in the hold again
  }
  CHECK(waits == std::vector<std::chrono::milliseconds>{1s, 2s, 4s, 8s, 8s, 8s});
}

TEST_CASE("fill retries start short again after twice the longest wait without one", "[bridge][fill]") {
  fill_backoff backoff(1s, 8s);
  auto now = fill_backoff::clock::time_point{} + 1000s;
  for (int i = 0; i < 4; ++i)
    (void)backoff.next(now);
  CHECK(backoff.next(now + 16s) == 8s); // not quiet long enough
  CHECK(backoff.next(now + 16s + 16s + 1ms) == 1s);
  CHECK(backoff.next(now + 33s) == 2s);
}
