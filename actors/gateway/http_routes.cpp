// SPDX-License-Identifier: MIT
#include "actors/gateway/http_routes.hpp"

#include <boost/beast/http.hpp>

#include <boost/json.hpp>

#include "actors/gateway/community_page.hpp"
#include "protocol/nip19.hpp"
#include "protocol/host.hpp"
#include "protocol/nip86.hpp"
#include "protocol/relay_info.hpp"

namespace comb::actors {
namespace http = boost::beast::http;

namespace {

http_response text_response(const http_request& request, http::status status, std::string body,
                            const char* content_type = "text/plain; charset=utf-8") {
  http_response response{status, request.version()};
  response.set(http::field::server, "comb");
  response.set(http::field::content_type, content_type);
  response.set(http::field::access_control_allow_origin, "*");
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  if (request.method() == http::verb::head)
    response.body().clear(); // its Content-Length stays the GET answer's (RFC 9110)
  return response;
}

std::string relay_info_document(const gateway_context& context,
                                const storage::community_row& community) {
  const auto& s = context.settings;
  protocol::relay_info info;
  const auto& about = community.info;
  info.name = about.name.empty() ? s.name : about.name;
  info.description = about.description.value_or(s.description);
  info.icon = about.icon;
  info.owner_pubkey = about.owner_hex;
  info.contact = s.contact;
  info.self_pubkey = context.signers->hex_of(community.host);
  info.version = "0.1.0";
  info.supported_nips = {1, 9, 11, 29, 40, 42, 43, 45, 62, 70, 86, 98};
  info.limits = s.limits;
  info.created_at_upper_seconds = s.created_at.max_seconds_ahead;
  info.created_at_lower_seconds = s.created_at.max_seconds_behind;
  info.auth_required = community.closed;
  info.restricted_writes = community.closed;
  return protocol::render_relay_info(info);
}

std::string npub_of(const std::string& hex) {
  auto key = protocol::parse_public_key(hex);
  return key ? protocol::encode_nip19("npub", *key) : std::string();
}

/// The page a browser gets: the same fields as NIP-11, for people.
std::string page_of(const gateway_context& context, const storage::community_row& community) {
  const auto& s = context.settings;
  const auto& about = community.info;
  community_page page;
  page.name = about.name.empty() ? s.name : about.name;
  page.description = about.description.value_or(s.description);
  page.icon = about.icon;
  // Every community of a deployment is reached the same way as its public URL (wss:// behind
  // a TLS proxy); the host is the community's own.
  const bool tls = s.effective_public_url().starts_with("wss://");
  page.relay_url = (tls ? "wss://" : "ws://") + community.host;
  page.closed = community.closed;
  page.relay_npub = npub_of(context.signers->hex_of(community.host));
  page.owner_npub = npub_of(about.owner_hex);
  return render_community_page(page);
}

bool wants_relay_info(const http_request& request) {
  auto accept = request[http::field::accept];
  return accept.find("application/nostr+json") != boost::beast::string_view::npos;
}

} // namespace

std::optional<http_response> probe_route(const http_request& request,
                                         const gateway_context& context, bool detailed) {
  auto target = request.target();
  if (target == "/healthz")
    return text_response(request, http::status::ok, "ok\n");
  if (target == "/readyz") {
    std::string problem = context.readiness ? context.readiness(detailed) : std::string();
    if (problem.empty())
      return text_response(request, http::status::ok, "ready\n");
    return text_response(request, http::status::service_unavailable, "degraded: " + problem + "\n");
  }
  return std::nullopt;
}

/// The metrics listener's answers carry no CORS header: a page a browser on the pod's machine
/// (or on an operator's end of a forwarded port) opens must not read the metrics, nor the
/// detailed readiness that names the database's host and user. Nor may a page from a public
/// name its owner pointed at this machine afterwards (DNS rebinding): for the browser that one
/// is of the same origin, and its Host is that public name.
http_response metrics_route(const http_request& request, const gateway_context& context) {
  if (!protocol::private_host(request[http::field::host], context.settings.metrics_hosts)) {
    bump(context.metrics->metrics_requests_misdirected);
    auto refused = text_response(request, http::status::misdirected_request,
                                 "relay: this listener answers IP addresses, private names and COMB_METRICS_HOSTS\n");
    refused.erase(http::field::access_control_allow_origin);
    refused.keep_alive(false);
    return refused;
  }
  auto response = [&] {
    if (request.target() == "/metrics" && request.method() == http::verb::get)
      return text_response(request, http::status::ok, context.metrics->render(),
                           "text/plain; version=0.0.4");
    if (auto probe = probe_route(request, context, true))
      return std::move(*probe);
    return text_response(request, http::status::not_found, "not found\n");
  }();
  response.erase(http::field::access_control_allow_origin);
  return response;
}

namespace {

/// Browsers may call NIP-86 and read NIP-11 from any page: "*" does not cover Authorization, so
/// the headers are named (NIP-11 asks for them on the document itself too, not only on a
/// preflight).
void allow_cross_origin_calls(http_response& response) {
  response.set(http::field::access_control_allow_headers, "Authorization, Content-Type, Accept");
  response.set(http::field::access_control_allow_methods, "GET, POST, OPTIONS");
}

} // namespace

namespace {

/// What `GET /` answers, by what the request accepts: NIP-11, a page, or a line of text.
http_response root_answer(const http_request& request, const gateway_context& context,
                          const storage::community_row& community) {
  if (wants_relay_info(request)) {
    auto response = text_response(request, http::status::ok, relay_info_document(context, community),
                                  "application/nostr+json");
    allow_cross_origin_calls(response);
    return response;
  }
  if (wants_html(request[http::field::accept])) {
    auto page = text_response(request, http::status::ok, page_of(context, community),
                              "text/html; charset=utf-8");
    // No scripts, no frames, images from anywhere (the icon): a page that cannot run code.
    page.set("Content-Security-Policy",
             "default-src 'none'; img-src https: http:; style-src 'unsafe-inline'; frame-ancestors 'none'");
    page.set("X-Content-Type-Options", "nosniff");
    return page;
  }
  return text_response(request, http::status::ok,
                       "comb relay for " + community.host
                         + ": connect with a Nostr client over WebSocket.\n");
}

} // namespace

http_response community_route(const http_request& request, const gateway_context& context,
                              const storage::community_row& community) {
  if (request.method() == http::verb::options) {
    auto response = text_response(request, http::status::no_content, "");
    allow_cross_origin_calls(response);
    response.set(http::field::access_control_max_age, "86400");
    return response;
  }
  // HEAD as GET (uptime monitors use it), without the body.
  const bool head = request.method() == http::verb::head;
  if (request.target() != "/" || (request.method() != http::verb::get && !head))
    return text_response(request, http::status::not_found, "not found\n");
  auto response = root_answer(request, context, community);
  // Three answers at one address: a cache in front must not give a browser's page to an app
  // asking for NIP-11 (welshman would lose the space's name, icon and rooms).
  response.set(http::field::vary, "Accept");
  return response;
}

http_response oversize_body(const http_request& request) {
  auto response = text_response(request, http::status::payload_too_large,
                                protocol::render_management_error("request body is too large"),
                                "application/json");
  response.keep_alive(false);
  return response;
}

http_response oversize_headers() {
  http_response response{http::status::request_header_fields_too_large, 11};
  response.set(http::field::server, "comb");
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.body() = "request headers are too large\n";
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

namespace {

/// The refusal as NIP-86 clients parse it: the same status with a JSON `error`.
http_response json_refusal(const http_request& request, http_response text) {
  std::string message = text.body();
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  return text_response(request, text.result(), protocol::render_management_error(message), "application/json");
}

http_response text_refusal(const http_request& request, const host_lookup& lookup) {
  if (!lookup.answered)
    return text_response(request, http::status::service_unavailable,
                         "relay: the community directory is unavailable, retry shortly\n");
  if (lookup.community && lookup.community->archived)
    return text_response(request, http::status::forbidden, "relay: this community is archived\n");
  return text_response(request, http::status::not_found,
                       "relay: no community is configured for this host\n");
}

} // namespace

http_response bound_refusal(const http_request& request, http::status status, std::string text) {
  auto response = text_response(request, status, std::move(text));
  if (request.method() == http::verb::post)
    response = json_refusal(request, std::move(response));
  response.keep_alive(false);
  return response;
}

http_response refusal(const http_request& request, const host_lookup& lookup) {
  auto text = text_refusal(request, lookup);
  auto response = request.method() == http::verb::post ? json_refusal(request, std::move(text)) : text;
  response.keep_alive(false); // the socket closes after it: a pooled client must not reuse it
  return response;
}

} // namespace comb::actors
