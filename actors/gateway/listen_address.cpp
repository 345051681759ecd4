// SPDX-License-Identifier: MIT
#include "actors/gateway/listen_address.hpp"

#include <algorithm>
#include <boost/asio/ip/v6_only.hpp>
#include <stdexcept>

#include "protocol/address.hpp"

namespace comb::actors {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

std::string shown(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

std::vector<tcp::endpoint> looked_up(const protocol::host_port& where, boost::system::error_code& ec) {
  asio::io_context io;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(where.host, std::to_string(*where.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  std::vector<tcp::endpoint> out;
  for (const auto& entry : results)
    if (std::find(out.begin(), out.end(), entry.endpoint()) == out.end())
      out.push_back(entry.endpoint());
  return out;
}

std::optional<std::string> listen_on(asio::io_context& io, const tcp::endpoint& endpoint,
                                     int backlog, tcp::acceptor& acceptor) {
  boost::system::error_code ec;
  acceptor = tcp::acceptor(io);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && endpoint.address().is_v6())
    acceptor.set_option(asio::ip::v6_only(true), ec); // [::] beside 0.0.0.0 on the same port
  if (!ec)
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    acceptor.bind(endpoint, ec);
  if (!ec)
    acceptor.listen(backlog, ec);
  if (ec)
    return "cannot listen on " + shown(endpoint) + ": " + ec.message();
  return std::nullopt;
}

} // namespace

protocol::result<std::vector<tcp::endpoint>, std::string> resolve_listen(std::string_view setting,
                                                                          const std::string& value) {
  const std::string named = std::string(setting) + "=" + value + ": ";
  auto where = protocol::parse_host_and_port(value);
  if (!where)
    return named + where.error();
  boost::system::error_code ec;
  auto endpoints = looked_up(where.value(), ec);
  if (ec || endpoints.empty())
    return named + "cannot resolve " + where->host + ": "
           + (ec ? ec.message() : std::string("no address"));
  return endpoints;
}

std::optional<std::string> listen_on_all(asio::io_context& io, const std::vector<tcp::endpoint>& where,
                                         int backlog, std::vector<tcp::acceptor>& out) {
  out.clear();
  unsigned short port = 0;
  for (auto endpoint : where) {
    if (endpoint.port() == 0)
      endpoint.port(port);
    out.emplace_back(io);
    if (auto error = listen_on(io, endpoint, backlog, out.back())) {
      out.clear();
      return error;
    }
    port = out.back().local_endpoint().port();
  }
  return std::nullopt;
}

std::vector<tcp::acceptor> open_listeners(asio::io_context& io, std::string_view setting,
                                          const std::string& value, int backlog) {
  auto endpoints = resolve_listen(setting, value);
  if (!endpoints)
    throw std::runtime_error(endpoints.error());
  std::vector<tcp::acceptor> out;
  if (auto error = listen_on_all(io, endpoints.value(), backlog, out))
    throw std::runtime_error(std::string(setting) + "=" + value + ": " + *error);
  return out;
}

} // namespace comb::actors
