// SPDX-License-Identifier: MIT
// Listen addresses on real loopback sockets: a name binds every address it resolves to, on one
// port, and a failure names the address that failed.
#include <catch2/catch.hpp>

#include <boost/asio/ip/v6_only.hpp>

#include "actors/gateway/listen_address.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace comb::actors;

namespace {

bool has_ipv6_loopback() {
  asio::io_context io;
  tcp::acceptor probe(io);
  boost::system::error_code ec;
  probe.open(tcp::v6(), ec);
  if (!ec)
    probe.bind({asio::ip::make_address("::1"), 0}, ec);
  return !ec;
}

} // namespace

TEST_CASE("a host name is resolved at start; a bad one names the setting", "[listen]") {
  auto local = resolve_listen("COMB_LISTEN", "localhost:7799");
  REQUIRE(local);
  REQUIRE_FALSE(local.value().empty());
  for (const auto& endpoint : local.value()) {
    CHECK(endpoint.address().is_loopback());
    CHECK(endpoint.port() == 7799);
  }
  auto nowhere = resolve_listen("COMB_LISTEN", "nowhere.invalid:7799");
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error().starts_with("COMB_LISTEN=nowhere.invalid:7799: cannot resolve nowhere.invalid"));
  auto literal = resolve_listen("COMB_METRICS_LISTEN", "[zz]:1");
  REQUIRE_FALSE(literal);
  CHECK(literal.error().starts_with("COMB_METRICS_LISTEN=[zz]:1: "));
}

TEST_CASE("every address is bound, on the same port when the port is 0", "[listen]") {
  if (!has_ipv6_loopback()) {
    WARN("no IPv6 loopback on this machine: only the IPv4 half is checked elsewhere");
    return;
  }
  asio::io_context io;
  std::vector<tcp::acceptor> acceptors;
  const std::vector<tcp::endpoint> both{{asio::ip::make_address("127.0.0.1"), 0},
                                        {asio::ip::make_address("::1"), 0}};
  REQUIRE_FALSE(listen_on_all(io, both, 8, acceptors));
  REQUIRE(acceptors.size() == 2);
  const auto port = acceptors[0].local_endpoint().port();
  CHECK(port != 0);
  CHECK(acceptors[1].local_endpoint().port() == port);
  CHECK(acceptors[1].local_endpoint().address().is_v6());

  // The same two addresses again: the first is taken, and the error says which one.
  std::vector<tcp::acceptor> again;
  const std::vector<tcp::endpoint> taken{{asio::ip::make_address("::1"), 0},
                                         {asio::ip::make_address("127.0.0.1"), port}};
  auto error = listen_on_all(io, taken, 8, again);
  REQUIRE(error);
  CHECK(error->find("cannot listen on 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(again.empty()); // the [::1] acceptor opened before the failure is closed again
}

TEST_CASE("open_listeners throws with the setting and the address", "[listen]") {
  asio::io_context io;
  auto first = open_listeners(io, "COMB_LISTEN", "127.0.0.1:0", 8);
  REQUIRE(first.size() == 1);
  const auto port = std::to_string(first[0].local_endpoint().port());
  CHECK_THROWS_WITH(open_listeners(io, "COMB_LISTEN", "127.0.0.1:" + port, 8),
                    Catch::Contains("COMB_LISTEN=127.0.0.1:" + port + ": cannot listen on 127.0.0.1:" + port));
}
