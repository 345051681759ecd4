// SPDX-License-Identifier: MIT
#include "actors/management/management_rules.hpp"

#include "protocol/nip98.hpp"

#include <algorithm>
#include <cctype>

namespace comb::actors {
namespace {

using protocol::management_method;
using storage::membership_change;

} // namespace

management_reply management_success(std::string_view result_json) {
  return {200, protocol::render_management_result(result_json), management_outcome::ok};
}

management_reply management_refusal(int status, management_outcome outcome,
                                    std::string_view message) {
  return {status, protocol::render_management_error(message), outcome};
}

bool is_management_content_type(std::string_view content_type) noexcept {
  constexpr std::string_view expected = "application/nostr+json+rpc";
  auto end = content_type.find(';');
  auto type = content_type.substr(0, end);
  while (!type.empty() && type.back() == ' ')
    type.remove_suffix(1);
  return type.size() == expected.size()
         && std::equal(type.begin(), type.end(), expected.begin(), [](char a, char b) {
              return std::tolower(static_cast<unsigned char>(a)) == b;
            });
}

void count_management_call(relay_metrics& metrics, std::optional<protocol::management_method> method,
                           management_outcome outcome) {
  auto row = method ? static_cast<std::size_t>(*method) : protocol::management_method_count;
  bump(metrics.management_calls[row][static_cast<std::size_t>(outcome)]);
}

void count_management_call(relay_metrics& metrics, std::string_view body, management_outcome outcome) {
  auto named = protocol::parse_management_request(body);
  count_management_call(metrics, named ? std::optional(named->method) : std::nullopt, outcome);
}

std::variant<protocol::event, management_reply> check_call_auth(const management_call& call, std::int64_t now) {
  if (!is_management_content_type(call.content_type))
    return management_refusal(415, management_outcome::failed,
                              "Content-Type must be application/nostr+json+rpc");
  if (call.body.size() > protocol::max_management_body_bytes)
    return management_refusal(413, management_outcome::failed, "request body is too large");
  auto auth = protocol::check_http_auth(
    call.authorization,
    protocol::http_auth_expectation{call.host, "POST", call.body, now, management_auth_window_seconds});
  if (!auth)
    return management_refusal(401, management_outcome::unauthorized, auth.error().detail);
  return std::move(auth).value();
}

std::optional<storage::membership_command>
membership_command_for(const protocol::management_request& request,
                       const protocol::bytes32& caller) {
  if (!request.target)
    return std::nullopt;
  storage::membership_command command;
  command.subject = *request.target;
  command.requested_by = caller;
  command.added_by = "nip86:" + protocol::to_hex(caller);
  command.role = storage::member_role::member;
  switch (request.method) {
    case management_method::allow_pubkey:
      command.change = membership_change::add_member;
      command.lifts_ban = true;
      break;
    case management_method::unallow_pubkey: command.change = membership_change::remove_member; break;
    case management_method::ban_pubkey:
      command.change = membership_change::ban_pubkey;
      command.reason = request.text;
      break;
    case management_method::unban_pubkey: command.change = membership_change::unban_pubkey; break;
    default: return std::nullopt;
  }
  return command;
}

management_reply refusal_to_non_manager(std::string_view body) {
  auto request = protocol::parse_management_request(body);
  if (request && request->method == protocol::management_method::supported_methods)
    return management_success("[]");
  return management_refusal(403, management_outcome::forbidden,
                            "only the community's owner or an admin may manage it");
}

management_reply management_reply_for(storage::membership_outcome outcome) {
  using o = storage::membership_outcome;
  switch (outcome) {
    case o::changed:
    case o::nothing_to_do:
    case o::already_member:
    case o::not_member: return management_success("true");
    case o::is_owner:
      return management_refusal(403, management_outcome::forbidden,
                                "the owner cannot be removed or banned; ownership moves only by transfer");
    case o::not_allowed:
      return management_refusal(403, management_outcome::forbidden,
                                "your role does not allow this (only the owner manages admins and lifts the owner's bans)");
    case o::banned:
      return management_refusal(200, management_outcome::error,
                                "this pubkey is banned from the community; unban it first");
    case o::community_full:
      return management_refusal(200, management_outcome::error,
                                "this community has reached its member limit");
    case o::archived:
      return management_refusal(403, management_outcome::forbidden, "this community is archived");
    case o::failed:
      return management_refusal(503, management_outcome::failed,
                                "could not update membership, please retry");
    case o::busy:
      return management_refusal(503, management_outcome::failed,
                                "too many membership requests are waiting, please retry");
    default:
      return management_refusal(200, management_outcome::error,
                                std::string(storage::outcome_name(outcome)));
  }
}

} // namespace comb::actors
