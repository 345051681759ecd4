// SPDX-License-Identifier: MIT
// What the sockets of one client address hold together, and what work already done costs it:
// filters in the fan-out (also over the pod), and database time charged into debt.
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <memory>

#include "actors/connection/connection.hpp"
#include "actors/connection/filter_share.hpp"
#include "actors/connection/ip_table.hpp"
#include "actors/connection/rate_limiter.hpp"
#include "protocol/filter_json.hpp"
#include "support/filter_of.hpp"

using namespace comb;
using comb::test::filter_of;
using actors::connection;
using actors::connection_policy;

TEST_CASE("the sockets of one address hold at most their shared count of broad filters", "[actors][ip]") {
  auto address = std::make_shared<actors::ip_budget>(actors::ip_limits{});
  connection_policy policy;
  policy.ip = address;
  policy.max_broad_filters = 2;
  policy.max_broad_filters_per_address = 3;
  auto first = std::make_unique<connection>(policy, "a");
  connection second(policy, "b");
  CHECK(first->open_subscription("x", {filter_of(R"({"since":1})"), filter_of(R"({"limit":5})")}));
  CHECK(second.open_subscription("x", {filter_of(R"({"since":2})")}));
  // Each connection is within its own bound of two; the address is at its three.
  auto refused = second.open_subscription("y", {filter_of(R"({"since":3})")});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().text()
        == "rate-limited: too many filters without ids, authors, kinds or tags from your address (at most 3)");
  CHECK(second.open_subscription("y", {filter_of(R"({"kinds":[1]})")})); // filters with a condition are not counted
  CHECK(address->filters_held().broad == 3);
  // Replacing a subscription gives back its share first; closing and ending give back the rest.
  CHECK(first->open_subscription("x", {filter_of(R"({"since":1})")}));
  CHECK(address->filters_held().broad == 2);
  CHECK(second.open_subscription("z", {filter_of(R"({"since":3})")}));
  CHECK(second.close_subscription("x"));
  CHECK(address->filters_held().broad == 2);
  first.reset();
  CHECK(address->filters_held().broad == 1);
  CHECK(second.open_subscription("x", {filter_of(R"({"since":4})")}));
  CHECK(address->filters_held().broad == 2);
}

TEST_CASE("the sockets of one address hold at most their shared count of filters and values, and the pod its own",
          "[actors][ip]") {
  // A filter on a kind alone is checked against every event of that kind: 500 per socket over an
  // address's 256 sockets were 128,000 checks per event, none of them ever matching.
  auto metrics = std::make_shared<actors::relay_metrics>();
  auto pod = std::make_shared<actors::pod_filter_holdings>(metrics, actors::filter_holding{8, 100, 0});
  auto address = std::make_shared<actors::ip_budget>(actors::ip_limits{});
  connection_policy policy;
  policy.ip = address;
  policy.max_filters_per_address = 3;
  policy.max_filter_values_per_address = 5;
  policy.pod_filters = pod;
  auto first = std::make_unique<connection>(policy, "a");
  connection second(policy, "b");
  CHECK(first->open_subscription("x", {filter_of(R"({"kinds":[1],"until":0})"), filter_of(R"({"kinds":[1,7]})")}));
  auto refused = second.open_subscription("x", {filter_of(R"({"kinds":[1]})"), filter_of(R"({"kinds":[9]})")});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().text() == "rate-limited: too many filters from your address (at most 3)");
  refused = second.open_subscription("x", {filter_of(R"({"kinds":[1,2,3]})")});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().text() == "rate-limited: too many filter values from your address (at most 5)");
  CHECK(second.open_subscription("x", {filter_of(R"({"kinds":[1,2]})")}));
  CHECK(address->filters_held() == actors::filter_holding{3, 5, 0});
  CHECK(metrics->fanout_filters_held.load() == 3);
  CHECK(metrics->fanout_filter_values_held.load() == 5);
  // Another address is bounded by the pod's count: eight filters in all.
  policy.ip = std::make_shared<actors::ip_budget>(actors::ip_limits{});
  policy.max_filters_per_address = 100;
  policy.max_filter_values_per_address = 100;
  connection elsewhere(policy, "c");
  std::vector<protocol::filter> five(5, filter_of(R"({"kinds":[1]})"));
  CHECK(elsewhere.open_subscription("x", five));
  refused = elsewhere.open_subscription("y", {filter_of(R"({"kinds":[1]})")});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().text()
        == "rate-limited: the relay holds as many subscriptions as it may, try again later");
  // Closing and ending give their share back to the address and to the pod.
  CHECK(second.close_subscription("x"));
  first.reset();
  CHECK(address->filters_held() == actors::filter_holding{});
  CHECK(elsewhere.open_subscription("y", {filter_of(R"({"kinds":[1]})")}));
  CHECK(pod->held() == actors::filter_holding{6, 6, 0});
}

TEST_CASE("work already done is charged into debt, down to one burst, and paid back by the rate",
          "[actors][ip]") {
  actors::rate_limiter bucket(10, 100);
  bucket.charge(0, 250);
  CHECK(bucket.in_debt(0));
  CHECK_FALSE(bucket.try_take(0, 1));
  CHECK_FALSE(bucket.try_take(19.9, 100)); // from -100, twenty seconds to a full burst again
  CHECK_FALSE(bucket.in_debt(19.9));
  CHECK(bucket.try_take(20.5, 100));
  bucket.charge(20.5, 1'000'000);
  CHECK_FALSE(bucket.try_take(30.4, 1)); // at most one burst of debt
  CHECK(bucket.try_take(31, 1));
}

TEST_CASE("an address's database time has a bucket of its own: frames still pass while its queries are in debt",
          "[actors][ip]") {
  actors::ip_limits limits;
  limits.database_ms_rate = 1;
  limits.database_ms_burst = 100;
  actors::ip_budget address(limits);
  address.charge_database(0, 300);
  CHECK(address.database_in_debt(0));
  CHECK(address.try_take_frames(0, 1)); // an EVENT or an AUTH is not refused for it
  CHECK_FALSE(address.idle(0));
  CHECK(address.database_in_debt(99));
  CHECK_FALSE(address.database_in_debt(100.5));
}
