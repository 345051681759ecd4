// SPDX-License-Identifier: MIT
#include "actors/gateway/forwarded_client.hpp"

#include <string>
#include <string_view>

namespace comb::actors {
namespace {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;

/// Every line of the list field `name`, joined with ", " (headers are bounded, so is this).
std::string every_line(const http_request& request, std::string_view name) {
  std::string joined;
  auto [first, last] = request.equal_range(boost::beast::string_view(name.data(), name.size()));
  for (auto line = first; line != last; ++line) {
    if (!joined.empty())
      joined += ", ";
    joined.append(line->value().data(), line->value().size());
  }
  return joined;
}

/// The last line of the single-valued field `name`.
std::string last_line(const http_request& request, std::string_view name) {
  std::string value;
  auto [first, last] = request.equal_range(boost::beast::string_view(name.data(), name.size()));
  for (auto line = first; line != last; ++line)
    value.assign(line->value().data(), line->value().size());
  return value;
}

} // namespace

conf::ip_address forwarded_client(const http_request& request, const conf::ip_address& peer,
                                  const std::vector<conf::ip_network>& trusted) {
  return conf::client_address(peer, every_line(request, "X-Forwarded-For"),
                              last_line(request, "X-Real-IP"), trusted);
}

} // namespace comb::actors
