// SPDX-License-Identifier: MIT
#include "storage/redis/redis_url.hpp"

#include <charconv>

namespace comb::storage::redis_detail {
namespace {

constexpr std::string_view scheme = "redis://";

std::optional<int> parse_port(std::string_view text) {
  int port = 0;
  const auto* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, port);
  if (text.empty() || error != std::errc{} || stop != end || port < 1 || port > 65535)
    return std::nullopt;
  return port;
}

/// Splits `host[:port]` or `[v6]:port`; the brackets are what keep an IPv6 address's colons
/// apart from the port separator.
std::optional<std::string> split_host_port(std::string_view authority, redis_endpoint& out) {
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return "missing ']' after the IPv6 address";
    host = authority.substr(1, close - 1);
    const auto rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':'))
      return "unexpected text after ']'";
    port = rest.empty() ? rest : rest.substr(1);
    if (!rest.empty() && port.empty())
      return "empty port";
  } else if (const auto colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.find(':') != std::string_view::npos)
      return "an IPv6 address needs brackets, e.g. redis://[::1]:6379";
    if (port.empty())
      return "empty port";
  }
  if (host.empty())
    return "missing host";
  out.host = std::string(host);
  out.port = 6379;
  if (!port.empty()) {
    const auto number = parse_port(port);
    if (!number)
      return "port must be a number from 1 to 65535";
    out.port = *number;
  }
  return std::nullopt;
}

/// Pub/sub channels are server-wide in Redis: SELECT does not separate them, so a database
/// number would promise an isolation it cannot give. Only the default is accepted.
std::optional<std::string> check_path(std::string_view path) {
  if (path.empty() || path == "/" || path == "/0")
    return std::nullopt;
  return "a database number other than 0 has no effect on pub/sub (channels are server-wide); "
         "use a distinct channel instead";
}

} // namespace

std::optional<std::string> parse_redis_url(std::string_view url, redis_endpoint& out) {
  auto failed = [url](std::string_view why) {
    return "invalid Redis URL '" + std::string(url) + "': " + std::string(why);
  };
  if (url.starts_with("rediss://"))
    return failed("TLS (rediss://) is not supported");
  if (!url.starts_with(scheme))
    return failed("expected redis://host:port");
  const auto rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos)
    return failed("query parameters are not supported");
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos)
    return failed("credentials are not supported; keep Redis on loopback or a private network");
  if (auto error = split_host_port(authority, out))
    return failed(*error);
  if (auto error = check_path(slash == std::string_view::npos ? "" : rest.substr(slash)))
    return failed(*error);
  return std::nullopt;
}

} // namespace comb::storage::redis_detail
