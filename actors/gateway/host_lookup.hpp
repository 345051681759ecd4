// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "actors/gateway/community_directory.hpp"
#include "actors/gateway/gateway_context.hpp"

namespace comb::actors {

/// Which community serves `host`: from the shared cache, else asked of the directory actor
/// (counted in `host_lookups`). At most 256 lookups wait on it over the pod; past that the
/// answer is the host's last known one (counted in `host_lookups_stale`), else "not answered"
/// at once (HTTP 503), counted in `host_lookups_refused`.
[[nodiscard]] boost::asio::awaitable<host_lookup> lookup_host(gateway_context& context,
                                                              std::string host);

} // namespace comb::actors
