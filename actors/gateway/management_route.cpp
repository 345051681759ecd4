// SPDX-License-Identifier: MIT
#include "actors/gateway/management_route.hpp"

#include <boost/beast/http.hpp>

#include "actors/clock.hpp"
#include "actors/community/community_registry.hpp"
#include "actors/community/member_cache.hpp"
#include "actors/gateway/ask_actor.hpp"
#include "actors/waiting_place.hpp"
#include "actors/management/management_actor.hpp"
#include "actors/messages.hpp"

namespace comb::actors {
namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

/// NIP-86 calls that may wait on the management actor at once, over the pod. It checks each
/// call's NIP-98 signature and asks Postgres for the caller's role, one call at a time, and any
/// stranger may call: past it a call is answered 503 at once, so an owner's calls do not queue
/// behind a flood.
constexpr std::size_t max_waiting_management_calls = 64;

management_call call_of(const http_request& request, std::int64_t community_id, std::string host) {
  management_call call;
  call.community_id = community_id;
  call.host = std::move(host);
  call.authorization = std::string(request[http::field::authorization]);
  call.content_type = std::string(request[http::field::content_type]);
  call.body = request.body();
  return call;
}

http_response response_of(const http_request& request, const management_reply& reply) {
  http_response response{static_cast<http::status>(reply.status), request.version()};
  response.set(http::field::server, "comb");
  response.set(http::field::content_type, "application/json");
  response.set(http::field::access_control_allow_origin, "*");
  if (reply.status == 401)
    response.set(http::field::www_authenticate, "Nostr");
  response.keep_alive(request.keep_alive());
  response.body() = reply.body;
  response.prepare_payload();
  return response;
}

/// A call answered before it may wait for the management actor, which takes one call at a time
/// with 64 places for the pod, while any key can sign a valid NIP-98 event: a bad shape or
/// signature; and, once half the places are taken, a signer this pod's member cache knows to be
/// no owner or admin. Below that the actor asks Postgres, whose answer a cache behind a
/// promotion made on another pod would not give (Flotilla hides its admin tools for the session
/// after one refusal). A community not loaded here yet is left to the actor.
std::optional<management_reply> refusal_at_edge(gateway_context& context, const management_call& call) {
  auto checked = check_call_auth(call, unix_now());
  if (auto* refused = std::get_if<management_reply>(&checked))
    return std::move(*refused);
  if (context.management_calls_waiting.load() < max_waiting_management_calls / 2)
    return std::nullopt;
  auto handle = context.registry ? context.registry->find(call.community_id) : std::nullopt;
  if (!handle || !handle->members || !handle->members->closed())
    return std::nullopt;
  if (storage::manages(handle->members->role_of(std::get<protocol::event>(checked).pubkey)))
    return std::nullopt;
  return refusal_to_non_manager(call.body);
}

} // namespace

asio::awaitable<http_response> answer_management(gateway_context& context,
                                                 const http_request& request,
                                                 std::int64_t community_id, std::string host) {
  if (!context.management)
    co_return response_of(request, management_refusal(503, management_outcome::failed,
                                                      "management is not available"));
  if (request.target() != "/")
    co_return response_of(request, management_refusal(404, management_outcome::failed,
                                                      "NIP-86 is served on the relay's URL, /"));
  management_call call = call_of(request, community_id, std::move(host));
  if (auto refused = refusal_at_edge(context, call)) {
    if (refused->status != 200) // an empty supportedmethods is an answer, not a refusal
      bump(context.metrics->management_calls_refused_early);
    count_management_call(*context.metrics, call.body, refused->outcome);
    co_return response_of(request, *refused);
  }
  waiting_place place(context.management_calls_waiting, max_waiting_management_calls);
  if (!place.taken()) {
    bump(context.metrics->management_calls_refused);
    co_return response_of(request, management_refusal(503, management_outcome::failed,
                                                      "too many management calls are waiting, retry shortly"));
  }
  management_reply reply =
    co_await ask_actor<management_reply>(context.management, manage_atom_v, std::move(call));
  co_return response_of(request, reply);
}

} // namespace comb::actors
