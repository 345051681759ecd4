// SPDX-License-Identifier: MIT
// The pure pieces around the reducer: refetch coalescing, output, relay frames and URLs.
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"
#include "tests/unit/watch/watch_fixtures.hpp"
#include "tools/watch/alert_output.hpp"
#include "tools/watch/refetch_debouncer.hpp"
#include "tools/watch/relay_protocol.hpp"

using namespace comb;
using namespace comb::watch;
using namespace comb::watch::testing;

TEST_CASE("8000 hints coalesce into one refetch 500 ms after the last", "[watch][refetch]") {
  refetch_debouncer refetch;
  CHECK_FALSE(refetch.take_due(at_ms(0)));
  refetch.hint(at_ms(0));
  refetch.hint(at_ms(200));
  refetch.hint(at_ms(400));
  CHECK_FALSE(refetch.take_due(at_ms(899)));
  CHECK(refetch.take_due(at_ms(900)));
  CHECK_FALSE(refetch.take_due(at_ms(5000)));
  // An endless stream of hints still refetches, at the 2 s cap.
  for (int t = 10'000; t < 13'000; t += 100)
    refetch.hint(at_ms(t));
  CHECK(refetch.due() == at_ms(12'000));
}

TEST_CASE("alerts render as text, JSON and an environment", "[watch][output]") {
  alert one{{key(2)}, false};
  CHECK(render_alert_text(one, "hive.test").starts_with("new member in hive.test: npub1"));
  alert many{keys({2, 3, 4, 5, 6}), true};
  auto text = render_alert_text(many, "hive.test");
  CHECK(text.starts_with("5 new members in hive.test: npub1"));
  CHECK(text.ends_with(" and 2 more"));

  auto json = boost::json::parse(render_alert_json(many, "hive.test", 1700000000)).as_object();
  CHECK(json.at("community") == "hive.test");
  CHECK(json.at("members").as_array().size() == 5);
  CHECK(json.at("members").as_array()[0] == boost::json::value(key(2)));
  CHECK(json.at("summary") == true);
  CHECK(json.at("at") == 1700000000);

  auto environment = alert_environment(many, "hive.test", "{}");
  CHECK(environment[0] == "COMB_ALERT_COMMUNITY=hive.test");
  CHECK(environment[1] == "COMB_ALERT_MEMBERS=" + key(2) + " " + key(3) + " " + key(4) + " "
                            + key(5) + " " + key(6));
  CHECK(environment[2] == "COMB_ALERT_COUNT=5");
  CHECK(environment[3] == "COMB_ALERT_JSON={}");
}

TEST_CASE("relay URLs: ws:// only, community is the normalized host", "[watch][relay]") {
  auto relay = parse_relay_url("ws://Hive.Test:7777");
  REQUIRE(relay);
  CHECK(relay->host == "hive.test");
  CHECK(relay->port == "7777");
  CHECK(relay->authority == "hive.test:7777");
  CHECK(relay->target == "/");
  CHECK(relay->community == "hive.test:7777");
  auto plain = parse_relay_url("ws://[::1]/");
  REQUIRE(plain);
  CHECK(plain->host == "::1");
  CHECK(plain->port == "80");
  CHECK(plain->authority == "[::1]");
  CHECK(plain->community == "[::1]");
  CHECK_FALSE(parse_relay_url("ws://hive.test/path"));
  CHECK_FALSE(parse_relay_url("wss://hive.test"));
  CHECK_FALSE(parse_relay_url("http://hive.test"));
  CHECK_FALSE(parse_relay_url("ws://"));
}

TEST_CASE("the AUTH answer is a signed 22242 naming the relay and the challenge", "[watch][relay]") {
  auto key = protocol::key_pair::generate();
  auto auth = render_auth_frame(key, "ws://hive.test:7777", "c0ffee", 1700000000);
  auto frame = boost::json::parse(auth.frame).as_array();
  REQUIRE(frame.size() == 2);
  CHECK(frame[0] == "AUTH");
  auto ev = protocol::event_from_json(frame[1], {});
  REQUIRE(ev);
  CHECK_FALSE(protocol::verify_event(ev.value()));
  CHECK(ev->kind == 22242);
  CHECK(ev->pubkey == key.public_key());
  CHECK(protocol::to_hex(ev->id) == auth.event_id);
  CHECK(ev->tags == std::vector<protocol::tag>{{"relay", "ws://hive.test:7777"}, {"challenge", "c0ffee"}});
}

TEST_CASE("relay frames and NIP-11 documents are read", "[watch][relay]") {
  auto ok = parse_relay_frame(R"(["OK","abc",true,""])");
  REQUIRE(ok);
  CHECK(ok->kind == relay_frame::type::ok);
  CHECK(ok->text == "abc");
  CHECK(ok->accepted);
  auto closed = parse_relay_frame(R"(["CLOSED","list","auth-required: who?"])");
  CHECK(closed->kind == relay_frame::type::closed);
  CHECK(closed->subscription == "list");
  CHECK(parse_relay_frame(R"(["AUTH","xyz"])")->text == "xyz");
  CHECK_FALSE(parse_relay_frame("not json"));
  CHECK_FALSE(parse_relay_frame("{}"));
  auto broken_event = parse_relay_frame(R"(["EVENT","list",{"id":1}])");
  REQUIRE(broken_event);
  CHECK_FALSE(broken_event->ev);

  CHECK(render_req("list", 13534, key(9), {}, 1)
        == R"(["REQ","list",{"kinds":[13534],"authors":[")" + key(9) + R"("],"limit":1}])");
  CHECK(relay_pubkey_from_info(R"({"self":")" + key(9) + R"("})") == key(9));
  CHECK_FALSE(relay_pubkey_from_info(R"({"self":"nope"})"));
  CHECK_FALSE(relay_pubkey_from_info("[]"));
}

TEST_CASE("member tags of a 13534 list become the roster", "[watch][relay]") {
  protocol::event ev;
  ev.kind = 13534;
  ev.created_at = 42;
  ev.tags = {{"-"}, {"member", key(1), "owner"}, {"member", "bad"}, {"member", key(2)},
             {"member", key(3), "admin"}};
  auto list = membership_from_event(ev);
  REQUIRE(list);
  CHECK(list->created_at == 42);
  CHECK(roster_of(*list) == keys({1, 2, 3}));
  CHECK(names_as_manager(*list, key(1)));
  CHECK(names_as_manager(*list, key(3)));
  CHECK_FALSE(names_as_manager(*list, key(2)));
  ev.kind = 8000;
  CHECK_FALSE(membership_from_event(ev));
}

TEST_CASE("roles are read by NIP-43 role id, the older shape too", "[watch][relay]") {
  protocol::event ev;
  ev.kind = 13534;
  ev.tags = {{"-"},
             {"member", key(1), "member"},        // comb's older shape: a plain member
             {"member", key(2), "owner"},         // either shape: the owner
             {"member", key(3), "helper", "admin"}, // several role ids, one of them admin
             {"member", key(4), "helper"},        // a role id that grants no alerts
             {"member", key(5)}};                 // the current shape's plain member
  auto list = membership_from_event(ev);
  REQUIRE(list);
  CHECK(list->members[0].roles.empty());
  CHECK(list->members[2].roles == std::vector<std::string>{"helper", "admin"});
  CHECK_FALSE(names_as_manager(*list, key(1)));
  CHECK(names_as_manager(*list, key(2)));
  CHECK(names_as_manager(*list, key(3)));
  CHECK_FALSE(names_as_manager(*list, key(4)));
  CHECK_FALSE(names_as_manager(*list, key(5)));
}
