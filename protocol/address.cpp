// SPDX-License-Identifier: MIT
#include "protocol/address.hpp"

#include <algorithm>
#include <boost/url/ipv4_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <charconv>

namespace comb::protocol {
namespace {

namespace urls = boost::urls;

/// Longest host name DNS allows; longer text is refused before any work is done on it.
constexpr std::size_t max_name = 253;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
         || c == '.' || c == '_';
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  return out;
}

/// Boost.URL accepts any run of digits, and an empty port after ':'; comb wants 0-65535.
result<std::optional<std::uint16_t>, std::string> port_of(bool has_port, std::string_view digits) {
  if (!has_port)
    return std::optional<std::uint16_t>{};
  unsigned value = 0;
  const auto* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || digits.size() > 5 || error != std::errc{} || stop != end || value > 65535)
    return std::string("the port must be a number from 0 to 65535");
  return std::optional<std::uint16_t>{static_cast<std::uint16_t>(value)};
}

/// The host rules comb adds to RFC 3986's: the view is an authority_view or a url_view.
template <class View>
result<host_port, std::string> host_of(const View& view) {
  host_port out;
  switch (view.host_type()) {
  case urls::host_type::none:
    return std::string("missing host");
  case urls::host_type::ipvfuture:
    return std::string("only IPv6 addresses go in brackets");
  case urls::host_type::ipv6:
    out.host = view.host_ipv6_address().to_string();
    out.ipv6 = true;
    break;
  case urls::host_type::ipv4:
    out.host = view.host_ipv4_address().to_string();
    break;
  case urls::host_type::name: {
    std::string_view name = view.encoded_host();
    if (name.ends_with('.'))
      name.remove_suffix(1);
    if (name.empty())
      return std::string("missing host");
    if (name.size() > max_name || !std::all_of(name.begin(), name.end(), name_char))
      return std::string("a host name has only letters, digits, '-', '.' and '_'");
    out.host = lowercase(name);
    break;
  }
  }
  auto port = port_of(view.has_port(), view.port());
  if (!port)
    return port.error();
  out.port = port.value();
  return out;
}

/// Passwords with an '@' that was not percent-encoded are common in Redis and database URLs; the
/// last '@' before the path ends the user part, and the others are encoded so RFC 3986 reads it.
std::string with_encoded_at(std::string_view url) {
  const auto start = url.find("://");
  if (start == std::string_view::npos)
    return std::string(url);
  const auto rest = url.substr(start + 3);
  const auto authority = rest.substr(0, rest.find_first_of("/?#"));
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos)
    return std::string(url);
  std::string out(url.substr(0, start + 3));
  for (char c : authority.substr(0, at))
    out += c == '@' ? std::string("%40") : std::string(1, c);
  out += rest.substr(at);
  return out;
}

} // namespace

std::string host_port::bracketed_host() const {
  return ipv6 ? "[" + host + "]" : host;
}

std::string host_port::authority() const {
  return port ? bracketed_host() + ":" + std::to_string(*port) : bracketed_host();
}

bool host_port::literal() const {
  return ipv6 || !urls::parse_ipv4_address(host).has_error();
}

result<host_port, std::string> parse_host_port(std::string_view text) {
  if (text.size() > max_name + 8)
    return std::string("too long for an address");
  auto parsed = urls::parse_authority(text);
  if (parsed.has_error() || text.empty())
    return std::string("not host:port (IPv6 addresses go in brackets, e.g. [::1]:7777)");
  if (parsed.value().has_userinfo())
    return std::string("an address has no user part");
  return host_of(parsed.value());
}

result<host_port, std::string> parse_host_and_port(std::string_view text) {
  auto parsed = parse_host_port(text);
  if (parsed && !parsed->port)
    return std::string("the port is missing (host:port, e.g. 127.0.0.1:7777)");
  return parsed;
}

result<url_parts, std::string> parse_url(std::string_view text) {
  const std::string encoded = with_encoded_at(text);
  auto parsed = urls::parse_uri(encoded);
  if (parsed.has_error())
    return std::string("not a URL of the form scheme://host[:port][/path]");
  const urls::url_view& view = parsed.value();
  if (!view.has_authority())
    return std::string("the URL has no host (scheme://host)");
  auto where = host_of(view);
  if (!where)
    return where.error();
  url_parts out;
  out.scheme = lowercase(view.scheme());
  out.has_userinfo = view.has_userinfo();
  out.user = view.user();
  out.has_password = view.has_password();
  out.password = view.password();
  out.where = std::move(where).value();
  out.path = std::string(view.encoded_path());
  out.has_query = view.has_query();
  out.has_fragment = view.has_fragment();
  return out;
}

} // namespace comb::protocol
