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

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size())
      return std::nullopt;
    const int high = hex_digit(text[i + 1]);
    const int low = hex_digit(text[i + 2]);
    if (high < 0 || low < 0)
      return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

/// `user:password` or `:password` (the default user).
std::optional<std::string> parse_userinfo(std::string_view userinfo, redis_endpoint& out) {
  const auto colon = userinfo.find(':');
  if (colon == std::string_view::npos)
    return "credentials must be user:password or :password";
  auto user = percent_decode(userinfo.substr(0, colon));
  auto password = percent_decode(userinfo.substr(colon + 1));
  if (!user || !password)
    return "bad percent-encoding in the credentials";
  if (password->empty())
    return "empty password";
  out.user = std::move(*user);
  out.password = std::move(*password);
  return std::nullopt;
}

/// Where the user part ends: the last '@' before the path (a password may hold an '@' that was
/// not encoded).
std::size_t userinfo_end(std::string_view rest) {
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  return authority.rfind('@');
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
  if (url.starts_with("rediss://"))
    return failed("TLS (rediss://) is not supported");
  if (!url.starts_with(scheme))
    return failed("expected redis://host:port");
  auto rest = url.substr(scheme.size());
  out.user.clear();
  out.password.clear();
  if (const auto at = userinfo_end(rest); at != std::string_view::npos) {
    if (auto error = parse_userinfo(rest.substr(0, at), out))
      return failed(*error);
    rest = rest.substr(at + 1);
  }
  if (rest.find_first_of("?#") != std::string_view::npos)
    return failed("query parameters are not supported");
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  if (auto error = split_host_port(authority, out))
    return failed(*error);
  if (auto error = parse_database(slash == std::string_view::npos ? "" : rest.substr(slash), out))
    return failed(*error);
  return std::nullopt;
}

} // namespace comb::storage::redis_detail
