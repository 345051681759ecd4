// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <map>

#include "actors/fanout/subscription_index.hpp"
#include "protocol/filter_json.hpp"
#include "support/filter_of.hpp"

using namespace comb;
using comb::test::filter_of;
using comb::actors::subscription_index;

namespace {

protocol::event note(std::uint8_t author, std::uint32_t kind, std::vector<protocol::tag> tags = {}) {
  protocol::event ev;
  ev.id.fill(static_cast<std::uint8_t>(author + kind));
  ev.pubkey.fill(author);
  ev.kind = kind;
  ev.created_at = 100;
  ev.tags = std::move(tags);
  return ev;
}

using matches_t = std::vector<std::pair<std::uint64_t, std::vector<actors::matched_subscription>>>;

std::vector<actors::matched_subscription> subs(std::vector<std::string> ids) {
  std::vector<actors::matched_subscription> out;
  for (auto& id : ids)
    out.push_back({std::move(id), 0});
  return out;
}

} // namespace

TEST_CASE("the index finds exactly the subscriptions whose filters match", "[actors][fanout]") {
  subscription_index index;
  index.add(1, "kinds", {filter_of(R"({"kinds":[1]})")});
  index.add(1, "tag", {filter_of(R"({"#t":["bees"]})")});
  index.add(2, "all", {filter_of(R"({})")});
  index.add(2, "nothing", {filter_of(R"({"kinds":[]})")});
  index.add(3, "author", {filter_of(R"({"authors":[")" + std::string(64, '9') + R"("]})")});
  index.add(3, "two filters", {filter_of(R"({"kinds":[1]})"), filter_of(R"({"#t":["bees"]})")});

  auto matched = index.match(note(5, 1, {{"t", "bees"}}));
  CHECK(matched == matches_t{{1, subs({"kinds", "tag"})}, {2, subs({"all"})}, {3, subs({"two filters"})}});
  CHECK(index.match(note(5, 7)) == matches_t{{2, subs({"all"})}});
  CHECK(index.size() == 6);
}

TEST_CASE("replacing, removing and forgetting subscriptions", "[actors][fanout]") {
  subscription_index index;
  index.add(1, "s", {filter_of(R"({"kinds":[1]})")});
  index.add(1, "s", {filter_of(R"({"kinds":[7]})")});
  CHECK(index.match(note(1, 1)).empty());
  CHECK(index.match(note(1, 7)) == matches_t{{1, subs({"s"})}});
  index.add(1, "t", {filter_of(R"({"kinds":[7]})")});
  index.remove(1, "s");
  CHECK(index.match(note(1, 7)) == matches_t{{1, subs({"t"})}});
  index.add(2, "u", {filter_of(R"({"kinds":[7]})")});
  index.remove_owner(1);
  CHECK(index.match(note(1, 7)) == matches_t{{2, subs({"u"})}});
  CHECK(index.size() == 1);
}

TEST_CASE("matching work depends on candidates, not on every subscription", "[actors][fanout]") {
  subscription_index index;
  for (std::uint64_t owner = 1; owner <= 5000; ++owner) {
    protocol::bytes32 author{};
    author.fill(static_cast<std::uint8_t>(owner % 200));
    author[1] = static_cast<std::uint8_t>(owner / 200);
    protocol::filter f;
    f.authors = std::vector<protocol::bytes32>{author};
    index.add(owner, "follow", {f});
  }
  protocol::event ev = note(7, 1);
  ev.pubkey.fill(7);
  ev.pubkey[1] = 0;
  CHECK(index.match(ev) == matches_t{{7, subs({"follow"})}});
}

TEST_CASE("a filter is checked once per event, however often the event names its values",
          "[actors][fanout]") {
  subscription_index index;
  // 25 subscriptions of 20 filters, all filed under one value and failing on a second tag.
  for (std::uint64_t owner = 1; owner <= 25; ++owner)
    index.add(owner, "s", std::vector<protocol::filter>(20, filter_of(R"({"#t":["zz1"],"#r":["nope"]})")));
  std::vector<protocol::tag> repeated(2000, protocol::tag{"t", "zz1"});
  std::vector<actors::subscription_index::match_ref> out;
  CHECK(index.match_into(note(1, 20001, repeated), out) == 500);
  CHECK(out.empty());

  // One filter filed under 1,000 values, met by an event that carries all of them.
  subscription_index wide;
  std::string values;
  std::vector<protocol::tag> all;
  for (int i = 0; i < 1000; ++i) {
    values += (i ? ",\"v" : "\"v") + std::to_string(i) + "\"";
    all.push_back({"t", "v" + std::to_string(i)});
  }
  wide.add(1, "w", {filter_of(R"({"#t":[)" + values + "]}")});
  CHECK(wide.match_into(note(1, 1, all), out) == 1);
  CHECK(out.size() == 1);
}

TEST_CASE("the index agrees with checking every subscription as they come and go",
          "[actors][fanout]") {
  // Removal moves another filter into the freed slot of its bucket: every move must keep the
  // moved filter findable and removable.
  const std::vector<std::string> shapes{R"({"kinds":[1]})", R"({"#t":["a"]})", R"({"#t":["a","b"]})",
                                        R"({"kinds":[1,7]})", R"({})", R"({"#t":["b"],"kinds":[7]})"};
  subscription_index index;
  std::map<std::pair<std::uint64_t, std::string>, std::vector<protocol::filter>> live;
  std::uint32_t seed = 12345;
  auto next = [&](std::uint32_t below) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % below;
  };
  const std::vector<protocol::event> events{note(1, 1), note(1, 7, {{"t", "a"}}), note(1, 7, {{"t", "b"}}),
                                            note(1, 9, {{"t", "a"}, {"t", "a"}, {"t", "b"}})};
  for (int step = 0; step < 3000; ++step) {
    const std::uint64_t owner = 1 + next(12);
    const std::string id = "s" + std::to_string(next(4));
    const auto action = next(10);
    if (action < 6) {
      std::vector<protocol::filter> filters;
      for (std::uint32_t n = 1 + next(3); n > 0; --n)
        filters.push_back(filter_of(shapes[next(static_cast<std::uint32_t>(shapes.size()))]));
      index.add(owner, id, filters);
      live[{owner, id}] = filters;
    } else if (action < 9) {
      index.remove(owner, id);
      live.erase({owner, id});
    } else {
      index.remove_owner(owner);
      std::erase_if(live, [&](const auto& kv) { return kv.first.first == owner; });
    }
    const auto& ev = events[next(static_cast<std::uint32_t>(events.size()))];
    matches_t expected;
    for (const auto& [key, filters] : live) // the map's order: by owner, then subscription id
      if (protocol::matches_any(filters, ev)) {
        if (expected.empty() || expected.back().first != key.first)
          expected.emplace_back(key.first, std::vector<actors::matched_subscription>{});
        expected.back().second.push_back({key.second, 0});
      }
    INFO("step " << step);
    REQUIRE(index.match(ev) == expected);
    REQUIRE(index.size() == live.size());
  }
  for (std::uint64_t owner = 1; owner <= 12; ++owner)
    index.remove_owner(owner);
  CHECK(index.bucket_count() == 0);
}
