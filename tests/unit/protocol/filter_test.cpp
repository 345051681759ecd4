// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdio>

#include "protocol/event_tags.hpp"
#include "protocol/filter.hpp"
#include "protocol/filter_json.hpp"

using namespace comb::protocol;
namespace json = boost::json;

namespace {

event sample() {
  event ev;
  ev.id.fill(0x11);
  ev.pubkey.fill(0x22);
  ev.created_at = 1000;
  ev.kind = 1;
  ev.tags = {{"e", "abc", "wss://r"}, {"t", "bees"}, {"t", "honey"}, {"p"}, {"Title", "x"}};
  return ev;
}

filter parse(const std::string& text) {
  auto f = filter_from_json(json::parse(text), protocol_limits{});
  INFO(text << " -> " << (f ? "" : f.error().text()));
  REQUIRE(f);
  return f.value();
}

} // namespace

TEST_CASE("filters match events exactly as NIP-01 says", "[protocol][filter]") {
  const std::string id = std::string(64, '1'), other = std::string(64, '3');
  const std::string author = std::string(64, '2');
  struct row {
    std::string filter;
    bool expected;
  };
  const std::vector<row> table = {
    {R"({})", true},
    {R"({"ids":[")" + id + R"("]})", true},
    {R"({"ids":[")" + other + R"("]})", false},
    {R"({"ids":[")" + other + R"(",")" + id + R"("]})", true},
    {R"({"ids":[]})", false},
    {R"({"authors":[")" + author + R"("]})", true},
    {R"({"authors":[")" + other + R"("]})", false},
    {R"({"kinds":[1]})", true},
    {R"({"kinds":[0,7]})", false},
    {R"({"kinds":[]})", false},
    {R"({"since":1000})", true},
    {R"({"since":1001})", false},
    {R"({"until":1000})", true},
    {R"({"until":999})", false},
    {R"({"since":500,"until":1500})", true},
    {R"({"#t":["honey"]})", true},
    {R"({"#t":["wasps","bees"]})", true},
    {R"({"#t":["wasps"]})", false},
    {R"({"#t":["ants","honey","wasps"]})", true},
    {R"({"#t":["ants","hone","wasps"]})", false},
    {R"({"#t":[]})", false},
    {R"({"#e":["abc"]})", true},
    {R"({"#e":["wss://r"]})", false},
    {R"({"#p":["anything"]})", false},
    {R"({"#T":["x"]})", false},
    {R"({"#t":["bees"],"#e":["abc"]})", true},
    {R"({"#t":["bees"],"#e":["nope"]})", false},
    {R"({"kinds":[1],"authors":[")" + author + R"("],"#t":["bees"]})", true},
    {R"({"kinds":[1],"authors":[")" + other + R"("],"#t":["bees"]})", false},
    {R"({"limit":0})", true},
  };
  const event ev = sample();
  event_tags tags;
  tags.assign(ev);
  for (const auto& r : table) {
    INFO(r.filter);
    CHECK(matches(parse(r.filter), ev) == r.expected);
    CHECK(matches(parse(r.filter), ev, tags) == r.expected); // the fan-out's form
  }
}

TEST_CASE("a REQ's filters are OR", "[protocol][filter]") {
  std::vector<filter> filters = {parse(R"({"kinds":[7]})"), parse(R"({"#t":["bees"]})")};
  CHECK(matches_any(filters, sample()));
  filters.pop_back();
  CHECK_FALSE(matches_any(filters, sample()));
  CHECK_FALSE(matches_any({}, sample()));
}

TEST_CASE("filters that cannot match are recognised", "[protocol][filter]") {
  CHECK(matches_nothing(parse(R"({"kinds":[]})")));
  CHECK(matches_nothing(parse(R"({"#e":[]})")));
  CHECK(matches_nothing(parse(R"({"since":10,"until":5})")));
  CHECK_FALSE(matches_nothing(parse(R"({"since":5,"until":5})")));
  CHECK_FALSE(matches_nothing(parse(R"({})")));
}

TEST_CASE("filter parsing applies the limits it is given", "[protocol][filter]") {
  protocol_limits limits;
  limits.max_limit = 100;
  limits.max_values_per_filter_field = 2;
  CHECK(filter_from_json(json::parse(R"({"limit":5000})"), limits).value().limit == 100u);
  CHECK(filter_from_json(json::parse(R"({"limit":7})"), limits).value().limit == 7u);
  CHECK_FALSE(filter_from_json(json::parse(R"({"limit":7})"), limits).value().since);
  CHECK(filter_from_json(json::parse(R"({"kinds":[1,2,3]})"), limits).error().text()
        == "invalid: too many values in kinds");
  // Duplicate keys resolve as JSON.parse does: the last one wins.
  auto duplicate = filter_from_json(json::parse(R"({"#t":["a","b"],"#t":["c"]})"), limits);
  REQUIRE(duplicate);
  CHECK(duplicate.value().tags.at(0).values == std::vector<std::string>{"c"});
}

TEST_CASE("a filter field this relay does not implement is unsupported, as NIP-01's example says",
          "[protocol][filter]") {
  for (const char* text : {R"({"kinds":[0],"search":"bob"})", R"({"#emoji":["x"]})"}) {
    auto f = filter_from_json(json::parse(text), protocol_limits{});
    REQUIRE_FALSE(f);
    CHECK(f.error().text() == "unsupported: filter contains unknown elements");
  }
}

TEST_CASE("a filter takes as many authors as a large community's members page loads", "[protocol][filter]") {
  auto authors_json = [](std::size_t count) {
    std::string list;
    for (std::size_t i = 0; i < count; ++i) {
      char hex[65];
      std::snprintf(hex, sizeof hex, "%064zx", i);
      list += (i ? ",\"" : "\"") + std::string(hex) + "\"";
    }
    return R"({"kinds":[0],"authors":[)" + list + "]}";
  };
  protocol_limits limits;
  auto many = filter_from_json(json::parse(authors_json(limits.max_values_per_filter_field)), limits);
  REQUIRE(many);
  CHECK(many.value().authors->size() == 10000u);
  CHECK(filter_from_json(json::parse(authors_json(limits.max_values_per_filter_field + 1)), limits).error().text()
        == "invalid: too many values in authors");
}

TEST_CASE("filter values are sorted and deduplicated", "[protocol][filter]") {
  auto f = parse(R"({"kinds":[7,1,7,3],"#t":["b","a","b"]})");
  CHECK(*f.kinds == std::vector<std::uint32_t>{1, 3, 7});
  CHECK(f.tags.at(0).values == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a filter without limit may return what it can match at most, when that is more", "[protocol][filter]") {
  comb::protocol::filter f;
  CHECK(comb::protocol::effective_limit(f, 500) == 500);
  f.authors = std::vector<comb::protocol::bytes32>(3000);
  f.kinds = std::vector<std::uint32_t>{0, 10002};
  CHECK(comb::protocol::effective_limit(f, 5000) == 6000); // one profile and one relay list each
  CHECK(comb::protocol::effective_limit(f, 500) == 1000);  // never past twice the operator's bound
  f.kinds = std::vector<std::uint32_t>{0, 1};
  CHECK(comb::protocol::effective_limit(f, 500) == 500); // notes: any number each
  f.kinds = std::vector<std::uint32_t>{0, 3, 10000, 10002};
  CHECK(comb::protocol::effective_limit(f, 5000) == 10000);
  f.limit = 20;
  CHECK(comb::protocol::effective_limit(f, 500) == 20);
  comb::protocol::filter by_id;
  by_id.ids = std::vector<comb::protocol::bytes32>(7000);
  CHECK(comb::protocol::effective_limit(by_id, 5000) == 7000);
  by_id.ids->resize(10);
  CHECK(comb::protocol::effective_limit(by_id, 5000) == 5000);
}
