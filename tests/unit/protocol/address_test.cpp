// SPDX-License-Identifier: MIT
// The one address parser: host:port settings, Host headers and URLs follow the same rules.
#include <catch2/catch.hpp>

#include "protocol/address.hpp"

using namespace comb::protocol;

TEST_CASE("host:port is split, names lowercased, IPv6 canonical and unbracketed", "[address]") {
  auto name = parse_host_and_port("LocalHost:7799");
  REQUIRE(name);
  CHECK(name->host == "localhost");
  CHECK(name->port == 7799);
  CHECK_FALSE(name->ipv6);
  CHECK_FALSE(name->literal());
  CHECK(name->authority() == "localhost:7799");

  auto v4 = parse_host_port("127.0.0.1:0");
  REQUIRE(v4);
  CHECK(v4->port == 0);
  CHECK(v4->literal());

  auto v6 = parse_host_port("[0:0:0:0:0:0:0:1]:7777");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->ipv6);
  CHECK(v6->literal());
  CHECK(v6->authority() == "[::1]:7777");

  auto bare = parse_host_port("relay.example.com.");
  REQUIRE(bare);
  CHECK(bare->host == "relay.example.com");
  CHECK_FALSE(bare->port);
  CHECK(bare->authority() == "relay.example.com");
}

TEST_CASE("things that are not host:port are refused with a reason", "[address]") {
  for (const char* text : {"[zz]", "[zz]:7777", "[v1.x]:7777", "[::1", "::1:7777", "", ":7777",
                           "user@host:1", "host:", "host:65536", "host:7x", "host:-1",
                           "exa mple:1", "ex%41mple:1", "a\r\nb:1", "host:1/path", "ex[a]mple"}) {
    INFO(text);
    auto parsed = parse_host_port(text);
    REQUIRE_FALSE(parsed);
    CHECK_FALSE(parsed.error().empty());
  }
  CHECK_FALSE(parse_host_port(std::string(300, 'a')));
}

TEST_CASE("a listen or peer address needs its port", "[address]") {
  CHECK(parse_host_and_port("localhost:7799"));
  auto missing = parse_host_and_port("localhost");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("port") != std::string::npos);
}

TEST_CASE("URLs: scheme, credentials, host, path, query", "[address]") {
  auto url = parse_url("REDIS://comb:p%40ss@[::1]:6380/3");
  REQUIRE(url);
  CHECK(url->scheme == "redis");
  CHECK(url->user == "comb");
  CHECK(url->password == "p@ss");
  CHECK(url->has_password);
  CHECK(url->where.host == "::1");
  CHECK(url->where.port == 6380);
  CHECK(url->path == "/3");
  CHECK_FALSE(url->has_query);

  auto unencoded = parse_url("redis://u:a@b@host:1");
  REQUIRE(unencoded);
  CHECK(unencoded->password == "a@b");
  CHECK(unencoded->where.host == "host");

  auto ws = parse_url("wss://Relay.Example.com/?x#y");
  REQUIRE(ws);
  CHECK(ws->where.host == "relay.example.com");
  CHECK(ws->has_query);
  CHECK(ws->has_fragment);

  CHECK_FALSE(parse_url("wss://[zz]/"));
  CHECK_FALSE(parse_url("wss://"));
  CHECK_FALSE(parse_url("relay.example.com"));
  CHECK_FALSE(parse_url("wss://host:99999"));
}
