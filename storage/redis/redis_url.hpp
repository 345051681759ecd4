// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace comb::storage::redis_detail {

/// Where the Redis server listens and how to log in.
struct redis_endpoint {
  std::string host; ///< a name, an IPv4 address, or an IPv6 address without brackets
  int port = 6379;
  std::string user;     ///< ACL user; empty: the default user
  std::string password; ///< empty: no AUTH. Never logged: see redact_redis_url
  int database = 0;     ///< SELECTed after AUTH (pub/sub channels are server-wide all the same)
};

/// Parses `redis://[user:password@]host[:port][/db]` (user and password percent-decoded) into
/// `out`. Returns an error message for anything else, including what this client does not offer
/// (TLS, query parameters), so a misconfiguration stops the start instead of silently doing
/// something else. The message never contains the password.
[[nodiscard]] std::optional<std::string> parse_redis_url(std::string_view url, redis_endpoint& out);

/// `url` with its password replaced by "***" (the whole user part, when it cannot tell which is
/// the password), for logs, errors and printed settings.
[[nodiscard]] std::string redact_redis_url(std::string_view url);

} // namespace comb::storage::redis_detail
