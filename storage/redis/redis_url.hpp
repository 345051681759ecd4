// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace comb::storage::redis_detail {

/// Where the Redis server listens.
struct redis_endpoint {
  std::string host; ///< a name, an IPv4 address, or an IPv6 address without brackets
  int port = 6379;
};

/// Parses `redis://host[:port][/0]` into `out`. Returns an error message for anything else,
/// including features this client does not offer (TLS, credentials, a database other than 0),
/// so a misconfiguration stops the start instead of silently doing something else.
[[nodiscard]] std::optional<std::string> parse_redis_url(std::string_view url, redis_endpoint& out);

} // namespace comb::storage::redis_detail
