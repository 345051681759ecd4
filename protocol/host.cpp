// SPDX-License-Identifier: MIT
#include "protocol/host.hpp"

#include "protocol/address.hpp"

namespace comb::protocol {

std::optional<std::string> normalize_host(std::string_view raw) {
  auto parsed = parse_host_port(raw);
  if (!parsed)
    return std::nullopt;
  host_port where = std::move(parsed).value();
  if (where.port == 80 || where.port == 443)
    where.port.reset();
  return where.authority();
}

std::optional<std::string> host_of_relay_url(std::string_view url) {
  auto parsed = parse_url(url);
  if (!parsed || (parsed->scheme != "ws" && parsed->scheme != "wss"))
    return std::nullopt;
  if (parsed->has_userinfo || parsed->has_query || parsed->has_fragment
      || (!parsed->path.empty() && parsed->path != "/"))
    return std::nullopt;
  return normalize_host(parsed->where.authority());
}

} // namespace comb::protocol
