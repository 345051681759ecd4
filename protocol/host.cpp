// SPDX-License-Identifier: MIT
#include "protocol/host.hpp"

#include <algorithm>

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

bool private_host(std::string_view raw, std::span<const std::string> also) {
  if (raw.empty())
    return true; // no Host (HTTP/1.0): no browser sends a request without one
  auto parsed = parse_host_port(raw);
  if (!parsed)
    return false;
  const auto& where = parsed.value();
  if (where.literal() || where.host.find('.') == std::string::npos)
    return true;
  for (std::string_view suffix : {".localhost", ".local", ".internal", ".home.arpa", ".svc"})
    if (where.host.ends_with(suffix))
      return true;
  return std::any_of(also.begin(), also.end(), [&](const std::string& named) {
    auto allowed = parse_host_port(named);
    return allowed && allowed.value().host == where.host;
  });
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
