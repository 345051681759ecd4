// SPDX-License-Identifier: MIT
#include "storage/redis/redis_url.hpp"

#include <charconv>

#include "protocol/address.hpp"

namespace comb::storage::redis_detail {
namespace {

/// `/db`: a number from 0 to 15 (Redis's default range; SELECT reports anything else).
std::optional<std::string> parse_database(std::string_view path, redis_endpoint& out) {
  out.database = 0;
  if (path.empty() || path == "/")
    return std::nullopt;
  int number = 0;
  const auto digits = path.substr(1);
  const auto* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, number);
  if (digits.empty() || error != std::errc{} || stop != end || number < 0 || number > 15)
    return "the path must be a database number, e.g. redis://host:6379/0";
  out.database = number;
  return std::nullopt;
}

/// Where the user part ends: the last '@' (a password may hold an '@' or a '/' that was not
/// encoded; a Redis URL's host and path hold neither, so whatever comes before it is hidden).
std::size_t userinfo_end(std::string_view rest) {
  return rest.rfind('@');
}

} // namespace

std::string redact_redis_url(std::string_view url) {
  const auto start = url.find("://");
  if (start == std::string_view::npos)
    return std::string(url);
  const auto rest = url.substr(start + 3);
  const auto at = userinfo_end(rest);
  if (at == std::string_view::npos)
    return std::string(url);
  const auto userinfo = rest.substr(0, at);
  const auto colon = userinfo.find(':');
  const std::string shown =
    colon == std::string_view::npos ? "***" : std::string(userinfo.substr(0, colon)) + ":***";
  return std::string(url.substr(0, start + 3)) + shown + std::string(rest.substr(at));
}

std::optional<std::string> parse_redis_url(std::string_view url, redis_endpoint& out) {
  auto failed = [url](std::string_view why) {
    return "invalid Redis URL '" + redact_redis_url(url) + "': " + std::string(why);
  };
  auto parsed = protocol::parse_url(url);
  if (!parsed)
    return failed(parsed.error());
  if (parsed->scheme == "rediss")
    return failed("TLS (rediss://) is not supported");
  if (parsed->scheme != "redis")
    return failed("expected redis://host:port");
  if (parsed->has_query || parsed->has_fragment)
    return failed("query parameters are not supported");
  if (parsed->has_userinfo && !parsed->has_password)
    return failed("credentials must be user:password or :password");
  if (parsed->has_password && parsed->password.empty())
    return failed("empty password");
  if (parsed->where.port == 0)
    return failed("port must be a number from 1 to 65535");
  out.user = parsed->user;
  out.password = parsed->password;
  out.host = parsed->where.host;
  out.port = parsed->where.port.value_or(6379);
  if (auto error = parse_database(parsed->path, out))
    return failed(*error);
  return std::nullopt;
}

} // namespace comb::storage::redis_detail
