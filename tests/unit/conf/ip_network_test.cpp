// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "conf/ip_network.hpp"
#include "conf/settings.hpp"

using namespace comb::conf;

TEST_CASE("addresses of both families parse, IPv4 as mapped IPv6", "[conf][ip]") {
  CHECK(parse_ip("192.0.2.1")->text() == "192.0.2.1");
  CHECK(parse_ip("::ffff:192.0.2.1") == parse_ip("192.0.2.1"));
  CHECK(parse_ip("[2001:db8::1]")->text() == "2001:db8::1");
  CHECK(parse_ip(" 10.0.0.1 ")->is_v4());
  CHECK_FALSE(parse_ip("10.0.0"));
  CHECK_FALSE(parse_ip("example.com"));
  CHECK_FALSE(parse_ip(""));
  CHECK_FALSE(parse_ip("10.0.0.1/8"));
}

TEST_CASE("per-address bounds count an IPv6 client by its /64, an IPv4 one by its address", "[conf][ip]") {
  CHECK(parse_ip("192.0.2.1")->budget_key() == "192.0.2.1");
  CHECK(parse_ip("192.0.2.2")->budget_key() != parse_ip("192.0.2.1")->budget_key());
  // Any address of one /64 is one client: a subscriber may pick any of them.
  CHECK(parse_ip("2001:db8:1:2::1")->budget_key() == "2001:db8:1:2::/64");
  CHECK(parse_ip("2001:db8:1:2:abcd:ef01:2345:6789")->budget_key() == "2001:db8:1:2::/64");
  CHECK(parse_ip("2001:db8:1:3::1")->budget_key() == "2001:db8:1:3::/64");
  CHECK(parse_ip("::1")->budget_key() == "::/64");
}

TEST_CASE("CIDR blocks parse and contain what they should", "[conf][ip]") {
  auto ten = parse_network("10.0.0.0/8");
  REQUIRE(ten);
  CHECK(ten->contains(*parse_ip("10.255.1.2")));
  CHECK_FALSE(ten->contains(*parse_ip("11.0.0.1")));
  CHECK_FALSE(ten->contains(*parse_ip("::a00:1"))); // an IPv6 address is not in an IPv4 block
  auto odd = parse_network("192.168.4.0/22");
  CHECK(odd->contains(*parse_ip("192.168.7.255")));
  CHECK_FALSE(odd->contains(*parse_ip("192.168.8.0")));
  auto v6 = parse_network("2001:db8::/32");
  CHECK(v6->contains(*parse_ip("2001:db8:ffff::1")));
  CHECK_FALSE(v6->contains(*parse_ip("2001:db9::1")));
  auto one = parse_network("127.0.0.1");
  CHECK(one->contains(*parse_ip("127.0.0.1")));
  CHECK_FALSE(one->contains(*parse_ip("127.0.0.2")));
  CHECK(parse_network("0.0.0.0/0")->contains(*parse_ip("8.8.8.8")));
  CHECK_FALSE(parse_network("10.0.0.0/33"));
  CHECK_FALSE(parse_network("10.0.0.0/"));
  CHECK_FALSE(parse_network("2001:db8::/129"));
  CHECK_FALSE(parse_network("10.0.0.0/8x"));
}

TEST_CASE("the client address is believed from headers only through a trusted proxy", "[conf][ip]") {
  auto trusted = parse_networks({"10.0.0.0/8", "::1"}).networks;
  auto proxy = *parse_ip("10.1.1.1");
  auto stranger = *parse_ip("203.0.113.9");
  CHECK(client_address(stranger, "198.51.100.1", "", trusted) == stranger);
  CHECK(client_address(proxy, "198.51.100.1", "", trusted) == *parse_ip("198.51.100.1"));
  // The rightmost entry not written by one of our proxies; left of it the client wrote freely.
  CHECK(client_address(proxy, "6.6.6.6, 198.51.100.1, 10.2.2.2", "", trusted) == *parse_ip("198.51.100.1"));
  CHECK(client_address(proxy, "", "198.51.100.3", trusted) == *parse_ip("198.51.100.3"));
  CHECK(client_address(proxy, "garbage", "", trusted) == proxy);
  CHECK(client_address(proxy, "", "", trusted) == proxy);
}

TEST_CASE("COMB_TRUSTED_PROXIES is validated", "[conf][ip]") {
  auto good = load_settings({{"COMB_TRUSTED_PROXIES", "10.0.0.0/8,192.0.2.7, ::1"}}, {});
  CHECK(good.problems.empty());
  CHECK(good.settings.trusted_proxies.size() == 3);
  auto bad = load_settings({{"COMB_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal"}}, {});
  REQUIRE(bad.problems.size() == 1);
  CHECK(bad.problems[0].option == "server.trusted_proxies");
  CHECK(bad.problems[0].message.find("proxy.internal") != std::string::npos);
}
