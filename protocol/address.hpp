// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/result.hpp"

namespace comb::protocol {

/// A host and an optional port, as written in a URL's authority, a `Host` header or a
/// `host:port` setting. Every address comb reads goes through parse_host_port or parse_url, so
/// they all follow one grammar (RFC 3986's, by Boost.URL) and one set of rules on top of it.
struct host_port {
  std::string host; ///< a lowercase name, an IPv4 address, or an IPv6 address without brackets
  bool ipv6 = false;
  std::optional<std::uint16_t> port;

  /// The host as it appears in an authority: IPv6 in brackets.
  [[nodiscard]] std::string bracketed_host() const;
  /// `host:port` (IPv6 in brackets), or the bracketed host alone when there is no port.
  [[nodiscard]] std::string authority() const;
  /// Whether the host is an IP address (no name to resolve).
  [[nodiscard]] bool literal() const;
};

/// Parses `host[:port]` or `[v6][:port]`. Refused: an empty host, a user part, IPvFuture
/// literals (`[v1.x]`) and anything not an IPv6 address in brackets (`[zz]`), names with
/// characters other than letters, digits, '-', '.', '_' (no percent-encoding: a name is looked
/// up or compared as written), a port that is empty, not digits or above 65535. A trailing dot
/// of a name is dropped and names are lowercased; IPv6 is written in its canonical form.
/// The error says what is wrong, without repeating the text.
[[nodiscard]] result<host_port, std::string> parse_host_port(std::string_view text);

/// Like parse_host_port, and the port must be there (a listen or peer address).
[[nodiscard]] result<host_port, std::string> parse_host_and_port(std::string_view text);

/// An absolute URL split into what comb uses.
struct url_parts {
  std::string scheme; ///< lowercase
  bool has_userinfo = false;
  std::string user;     ///< percent-decoded
  std::string password; ///< percent-decoded
  bool has_password = false;
  host_port where;
  std::string path; ///< as written, e.g. "" or "/" or "/3"
  bool has_query = false;
  bool has_fragment = false;
};

/// Parses `scheme://[user[:password]@]host[:port][/path][?query][#fragment]` with the host rules
/// of parse_host_port. The error never contains the user part.
[[nodiscard]] result<url_parts, std::string> parse_url(std::string_view text);

} // namespace comb::protocol
