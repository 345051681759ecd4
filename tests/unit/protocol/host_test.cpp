// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "protocol/host.hpp"

using namespace comb::protocol;

TEST_CASE("hosts are normalized for community lookup", "[protocol][host]") {
  CHECK(normalize_host("Example.COM") == "example.com");
  CHECK(normalize_host("example.com.") == "example.com");
  CHECK(normalize_host("example.com:80") == "example.com");
  CHECK(normalize_host("example.com:443") == "example.com");
  CHECK(normalize_host("example.com:7777") == "example.com:7777");
  CHECK(normalize_host("127.0.0.1:7777") == "127.0.0.1:7777");
  CHECK(normalize_host("[::1]:7777") == "[::1]:7777");
  CHECK(normalize_host("[::1]") == "[::1]");
  CHECK(normalize_host("LOCALHOST:7777") == "localhost:7777");
  CHECK(normalize_host("[0:0::1]:7777") == "[::1]:7777"); // one spelling per IPv6 address
}

TEST_CASE("things that are not hosts are refused", "[protocol][host]") {
  CHECK_FALSE(normalize_host(""));
  CHECK_FALSE(normalize_host("exa mple.com"));
  CHECK_FALSE(normalize_host("user@example.com"));
  CHECK_FALSE(normalize_host("example.com:"));
  CHECK_FALSE(normalize_host("example.com:99999"));
  CHECK_FALSE(normalize_host("example.com:7x"));
  CHECK_FALSE(normalize_host("[::1"));
  CHECK_FALSE(normalize_host("ex[a]mple"));
  CHECK_FALSE(normalize_host(std::string(300, 'a')));
  CHECK_FALSE(normalize_host("a\r\nb"));
  CHECK_FALSE(normalize_host("[zz]"));
  CHECK_FALSE(normalize_host("[zz]:7777"));
}

TEST_CASE("relay URLs yield their host", "[protocol][host]") {
  CHECK(host_of_relay_url("wss://Relay.Example.com") == "relay.example.com");
  CHECK(host_of_relay_url("wss://relay.example.com/") == "relay.example.com");
  CHECK(host_of_relay_url("ws://127.0.0.1:7777") == "127.0.0.1:7777");
  CHECK(host_of_relay_url("WS://localhost:80/") == "localhost");
  CHECK_FALSE(host_of_relay_url("https://relay.example.com"));
  CHECK_FALSE(host_of_relay_url("wss://relay.example.com/other"));
  CHECK_FALSE(host_of_relay_url("relay.example.com"));
  CHECK_FALSE(host_of_relay_url("wss://"));
  CHECK_FALSE(host_of_relay_url("wss://[zz]/"));
  CHECK_FALSE(host_of_relay_url("wss://user@relay.example.com"));
  CHECK_FALSE(host_of_relay_url("wss://relay.example.com/?x=1"));
}

TEST_CASE("a listener for this machine takes addresses and private names, not public ones", "[protocol][host]") {
  const std::vector<std::string> none;
  for (const char* host : {"127.0.0.1:9777", "[::1]:9777", "10.1.2.3", "localhost:9777", "comb:9777",
                           "metrics.localhost", "pod.local", "comb.monitoring.svc:9777",
                           "comb.monitoring.svc.cluster.local:9777", "box.internal", "nas.home.arpa"}) {
    INFO(host);
    CHECK(private_host(host, none));
  }
  // What a page from a public name that was re-pointed at 127.0.0.1 sends.
  CHECK(private_host("", none)); // HTTP/1.0 without Host: never a browser
  for (const char* host : {"rebind.attacker.example:9777", "metrics.example.com", "local.example", "a b"}) {
    INFO(host);
    CHECK_FALSE(private_host(host, none));
  }
  const std::vector<std::string> named{"metrics.example.com"};
  CHECK(private_host("Metrics.Example.com:9777", named));
  CHECK_FALSE(private_host("other.example.com", named));
}
