// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "actors/fanout/subscription_index.hpp"
#include "protocol/filter_json.hpp"

using namespace comb;
using comb::actors::subscription_index;

namespace {

protocol::filter filter_of(const std::string& json) {
  return protocol::filter_from_json(boost::json::parse(json), protocol::protocol_limits{}).value();
}

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
