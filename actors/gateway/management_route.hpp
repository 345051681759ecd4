// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "actors/gateway/gateway_context.hpp"
#include "actors/gateway/http_routes.hpp"

namespace comb::actors {

/// NIP-86: answers a POST to a community's URL through the management actor, with a JSON body
/// and CORS headers whatever the outcome. `host` is the normalized host the request was made to.
[[nodiscard]] boost::asio::awaitable<http_response>
answer_management(gateway_context& context, const http_request& request,
                  std::int64_t community_id, std::string host);

} // namespace comb::actors
