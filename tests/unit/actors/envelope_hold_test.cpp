// SPDX-License-Identifier: MIT
// Bridged events that wait for this pod to reach their origin's state version: released in
// order once it does, dropped after the wait or past the bounds, never delivered earlier.
#include <catch2/catch.hpp>

#include "actors/bridge/envelope_hold.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using actors::committed_event;
using actors::envelope_hold;

namespace {

committed_event event_in(std::int64_t community, const std::string& content) {
  static const auto author = protocol::key_pair::generate();
  auto ev = test::sign_event(author, 1, content);
  auto json = std::make_shared<const std::string>(protocol::render_event_json(ev));
  return {community, {std::make_shared<const protocol::event>(std::move(ev)), json}};
}

std::vector<std::string> contents(const std::vector<committed_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    out.push_back(e.event.ev->content);
  return out;
}

} // namespace

TEST_CASE("held events leave when their community reaches their version, in order", "[bridge]") {
  envelope_hold hold;
  const auto t0 = envelope_hold::clock::now();
  std::map<std::int64_t, std::int64_t> versions{{1, 4}, {2, 9}};
  auto version_of = [&](std::int64_t community) { return versions[community]; };
  REQUIRE(hold.hold(event_in(1, "a"), 5, t0, 0, 0));
  REQUIRE(hold.hold(event_in(1, "b"), 6, t0, 0, 0));
  REQUIRE(hold.hold(event_in(1, "c"), 5, t0, 0, 0)); // another origin, behind "b"
  REQUIRE(hold.hold(event_in(2, "x"), 10, t0, 0, 0));
  CHECK(hold.size() == 4);

  auto none = hold.release(t0, version_of);
  CHECK(none.ready.empty());
  CHECK(none.expired == 0);

  versions[1] = 5;
  CHECK(contents(hold.release(t0, version_of).ready) == std::vector<std::string>{"a"});
  versions[1] = 6;
  versions[2] = 10;
  CHECK(contents(hold.release(t0, version_of).ready) == std::vector<std::string>{"b", "c", "x"});
  CHECK(hold.empty());
  CHECK(hold.bytes() == 0);
}

TEST_CASE("an event that waited too long is dropped, never delivered", "[bridge]") {
  envelope_hold hold({10, 1 << 20, std::chrono::milliseconds(100)});
  const auto t0 = envelope_hold::clock::now();
  auto stuck = [](std::int64_t) { return std::int64_t{1}; };
  REQUIRE(hold.hold(event_in(1, "old"), 2, t0, 1'000, 0));
  REQUIRE(hold.hold(event_in(1, "new"), 2, t0 + std::chrono::milliseconds(60), 900, 0));
  auto early = hold.release(t0 + std::chrono::milliseconds(99), stuck);
  CHECK(early.ready.empty());
  CHECK(early.expired == 0);
  auto late = hold.release(t0 + std::chrono::milliseconds(100), stuck);
  CHECK(late.ready.empty());
  CHECK(late.expired == 1);
  CHECK(late.expired_since == 1'000); // a fill must reach back to where its gap began
  CHECK(hold.size() == 1);
  auto later = hold.release(t0 + std::chrono::milliseconds(200), stuck);
  CHECK(later.expired == 1);
  CHECK(later.expired_since == 900);
  CHECK(hold.empty());
}

TEST_CASE("the hold refuses what does not fit its count or bytes", "[bridge]") {
  const auto t0 = envelope_hold::clock::now();
  envelope_hold by_count({2, 1 << 20, std::chrono::milliseconds(100)});
  CHECK(by_count.hold(event_in(1, "1"), 2, t0, 0, 0));
  CHECK(by_count.hold(event_in(1, "2"), 2, t0, 0, 0));
  CHECK_FALSE(by_count.hold(event_in(1, "3"), 2, t0, 0, 0));
  CHECK(by_count.size() == 2);

  auto big = event_in(1, std::string(10'000, 'x'));
  envelope_hold by_bytes({100, actors::held_bytes(big) + 10, std::chrono::milliseconds(100)});
  CHECK(by_bytes.hold(big, 2, t0, 0, 0));
  CHECK_FALSE(by_bytes.hold(event_in(1, "small, but the room is taken"), 2, t0, 0, 0));
  CHECK(by_bytes.bytes() == actors::held_bytes(big));
}

TEST_CASE("a held list is counted with its parsed tags, not its JSON alone", "[bridge]") {
  static const auto relay = protocol::key_pair::generate();
  std::vector<std::vector<std::string>> tags{{"-"}};
  for (int i = 0; i < 10'000; ++i)
    tags.push_back({"member", std::string(64, static_cast<char>('a' + i % 6))});
  auto ev = test::sign_event(relay, 13534, "", tags);
  auto json = std::make_shared<const std::string>(protocol::render_event_json(ev));
  committed_event list{1, {std::make_shared<const protocol::event>(std::move(ev)), json}};
  // Each member tag is a vector of two strings, one on the heap: over three times its JSON.
  CHECK(actors::held_bytes(list) > 3 * json->size());
}
