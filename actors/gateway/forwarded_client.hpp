// SPDX-License-Identifier: MIT
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <vector>

#include "conf/ip_network.hpp"

namespace comb::actors {

/// Who `request` comes from (conf::client_address): the socket `peer`, unless it is one of the
/// `trusted` proxies. Every `X-Forwarded-For` line is read, joined as RFC 9110 joins repeated
/// lines: a proxy that appends its own line after one the client sent (HAProxy's `option
/// forwardfor`) is then the rightmost entry, where client_address looks. Of several `X-Real-IP`
/// lines the last counts: a proxy's own line follows the client's.
[[nodiscard]] conf::ip_address forwarded_client(
  const boost::beast::http::request<boost::beast::http::string_body>& request,
  const conf::ip_address& peer, const std::vector<conf::ip_network>& trusted);

} // namespace comb::actors
