// SPDX-License-Identifier: MIT
#include "actors/community/membership_requests.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;
using storage::membership_change;
using storage::membership_outcome;

namespace {

/// NIP-43 asks for requests made "now"; a replayed old request must not act again later.
constexpr std::int64_t request_skew_seconds = 300;

protocol::result<protocol::bytes32> target_of(const protocol::event& ev) {
  const std::string* p = protocol::first_tag_value(ev, "p");
  auto pubkey = p ? protocol::array_from_hex<32>(*p) : std::nullopt;
  if (!pubkey)
    return protocol::invalid("a p tag with the member's hex pubkey is required");
  return *pubkey;
}

protocol::result<storage::member_role> role_of(const protocol::event& ev, bool required) {
  const std::string* name = protocol::first_tag_value(ev, "role");
  if (!name)
    return required ? protocol::result<storage::member_role>(protocol::invalid("a role tag is required"))
                    : storage::member_role::member;
  auto role = storage::parse_role(*name);
  if (!role)
    return protocol::invalid("role must be admin or member");
  return *role;
}

protocol::result<storage::membership_command> user_command(const protocol::event& ev,
                                                           bool closed) {
  storage::membership_command c;
  c.subject = ev.pubkey;
  c.requested_by = ev.pubkey;
  if (ev.kind == join_request_kind) {
    const std::string* claim = protocol::first_tag_value(ev, "claim");
    if (closed && (!claim || claim->empty()))
      return protocol::invalid("a join request needs a claim tag with an invite code");
    c.change = closed ? membership_change::claim_invite : membership_change::claim_membership;
    c.invite_code = claim ? *claim : "";
    c.added_by = closed ? "invite" : "join";
    return c;
  }
  c.change = membership_change::remove_member; // a leave request
  return c;
}

protocol::result<storage::membership_command> admin_command(const protocol::event& ev) {
  auto target = target_of(ev);
  if (!target)
    return target.error();
  storage::membership_command c;
  c.subject = target.value();
  c.requested_by = ev.pubkey;
  c.added_by = "admin:" + protocol::to_hex(ev.pubkey);
  if (ev.kind == remove_member_kind) {
    c.change = membership_change::remove_member;
    return c;
  }
  auto role = role_of(ev, ev.kind == change_role_kind);
  if (!role)
    return role.error();
  c.role = role.value();
  c.change = ev.kind == add_member_kind ? membership_change::add_member
                                        : membership_change::update_role;
  return c;
}

} // namespace

bool is_membership_request(std::uint32_t kind) noexcept {
  return kind == join_request_kind || kind == leave_request_kind || kind == add_member_kind
         || kind == remove_member_kind || kind == change_role_kind;
}

protocol::result<storage::membership_command>
membership_command_for(const protocol::event& ev, bool closed_community, std::int64_t now) {
  if (ev.created_at > now + request_skew_seconds || ev.created_at < now - request_skew_seconds)
    return protocol::invalid("membership requests must be created within 5 minutes of now");
  bool user_request = ev.kind == join_request_kind || ev.kind == leave_request_kind;
  if (user_request && !protocol::is_protected(ev))
    return protocol::invalid("join and leave requests must carry the - tag (NIP-70)");
  return user_request ? user_command(ev, closed_community) : admin_command(ev);
}

membership_reply reply_for(std::uint32_t kind, membership_outcome outcome,
                           const std::string& relay_url) {
  using o = membership_outcome;
  if (outcome == o::failed)
    return {false, "error: could not update membership, please retry"};
  if (outcome == o::banned)
    return {false, kind == join_request_kind ? "blocked: you are banned from this community"
                                             : "blocked: this pubkey is banned from this community"};
  if (kind == join_request_kind) {
    switch (outcome) {
      case o::changed: return {true, "info: welcome to " + relay_url + "!"};
      case o::already_member: return {true, "duplicate: you are already a member of this relay."};
      case o::invite_expired: return {false, "restricted: this invite code has expired"};
      case o::invite_exhausted: return {false, "restricted: this invite code has no uses left"};
      default: return {false, "restricted: invalid invite code"};
    }
  }
  if (kind == leave_request_kind) {
    switch (outcome) {
      case o::changed: return {true, "info: you have left this community"};
      case o::is_owner: return {false, "restricted: the owner cannot leave; transfer ownership first"};
      default: return {false, "restricted: you are not a member of this community"};
    }
  }
  switch (outcome) {
    case o::changed:
      return {true, kind == add_member_kind      ? "info: member added"
                    : kind == remove_member_kind ? "info: member removed"
                                                 : "info: role updated"};
    case o::already_member: return {true, "duplicate: already a member"};
    case o::nothing_to_do: return {true, "duplicate: the member already has this role"};
    case o::not_member: return {false, "invalid: not a member of this community"};
    case o::is_owner: return {false, "restricted: the owner's membership and role can only change by transfer"};
    default: return {false, "restricted: your role does not allow this"};
  }
}

} // namespace comb::actors
