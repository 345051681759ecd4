// SPDX-License-Identifier: MIT
#include "actors/management/management_rules.hpp"

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
