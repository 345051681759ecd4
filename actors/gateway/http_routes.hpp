// SPDX-License-Identifier: MIT
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>

#include "actors/gateway/community_directory.hpp"
#include "actors/gateway/gateway_context.hpp"

namespace comb::actors {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// Answers that need no community: /healthz, /readyz (`detailed`: with the services' own
/// error text, for the metrics listener). Nothing for other targets.
[[nodiscard]] std::optional<http_response> probe_route(const http_request& request,
                                                       const gateway_context& context,
                                                       bool detailed = false);

/// The metrics listener's answers: /metrics, the probes, 404 for the rest. Never served on a
/// community's host (it tells member counts per community).
[[nodiscard]] http_response metrics_route(const http_request& request, const gateway_context& context);

/// Answers for a plain HTTP request to a community's host: NIP-11 on `GET /` with
/// `Accept: application/nostr+json`, an HTML page with `Accept: text/html` (a browser), one line
/// of text otherwise, 404 for other paths.
[[nodiscard]] http_response community_route(const http_request& request,
                                            const gateway_context& context,
                                            const storage::community_row& community);

/// The reply when a host maps to no usable community: 404 unknown, 403 archived, 503 when the
/// database could not be asked.
[[nodiscard]] http_response refusal(const http_request& request, const host_lookup& lookup);

/// A refusal of the pod's bounds (busy, rate-limited) that closes the connection: one line of
/// text, or for a POST the same status with a JSON `error` (NIP-86 clients in a browser read only
/// what carries CORS and parses), then close.
[[nodiscard]] http_response bound_refusal(const http_request& request, boost::beast::http::status status,
                                          std::string text);

/// 413 with a JSON `error` (NIP-86 clients parse every answer) for a body over the bound.
[[nodiscard]] http_response oversize_body(const http_request& request);

/// 431 for request headers over the bound (the request was never read whole), then close.
[[nodiscard]] http_response oversize_headers();

/// Whether a lookup result may serve clients.
[[nodiscard]] inline bool serves(const host_lookup& lookup) {
  return lookup.answered && lookup.community && !lookup.community->archived;
}

} // namespace comb::actors
