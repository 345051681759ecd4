// SPDX-License-Identifier: MIT
#include "actors/community/membership_requests.hpp"

#include "protocol/host.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;
using storage::membership_change;
using storage::membership_outcome;

namespace {

protocol::result<storage::member_role> role_of(const protocol::event& ev, bool required) {
  const std::string* name = protocol::first_tag_value(ev, "role");
  if (!name)
    return required ? protocol::result<storage::member_role>(protocol::invalid("a role tag is required"))
                    : storage::member_role::member;
  auto role = storage::parse_role(*name);
  if (!role)
    return protocol::invalid("role must be admin or member");
  // Two role tags must agree: applying the first would leave the stored event claiming the other.
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == "role" && t[1] != *name)
      return protocol::invalid("one role per request: role tags name different roles");
  return *role;
}

protocol::result<storage::membership_command> user_command(const protocol::event& ev,
                                                           const membership_context& context) {
  const bool closed = context.closed_community;
  storage::membership_command c;
  c.subject = ev.pubkey;
  c.requested_by = ev.pubkey;
  if (ev.kind == join_request_kind) {
    const std::string* claim = protocol::first_tag_value(ev, "claim");
    // A failed claim, so NIP-43's `restricted:`; Flotilla reads "invite code" in it as a refusal
    // (and shows nothing for a join it sent without one). A member's join goes on to the
    // database, whose locked roster decides: already a member, or the code is checked.
    if (closed && (!claim || claim->empty()) && !context.sender_is_member)
      return protocol::rejection{protocol::reason::restricted,
                                 "a join request needs a claim tag with an invite code"};
    if (claim && claim->size() > max_claim_bytes)
      return protocol::rejection{protocol::reason::restricted, "invalid invite code"};
    c.change = closed ? membership_change::claim_invite : membership_change::claim_membership;
    c.invite_code = claim ? *claim : "";
    c.added_by = closed ? "invite" : "join";
    return c;
  }
  c.change = membership_change::remove_member; // a leave request
  return c;
}

/// 9030-9032 name the community they are meant for, so one signed for another community (on
/// this deployment or any other) cannot be replayed here.
std::optional<protocol::rejection> check_relay_tag(const protocol::event& ev,
                                                   const std::string& host) {
  const std::string* relay = protocol::first_tag_value(ev, "relay");
  if (!relay)
    return protocol::invalid("a relay tag with this community's URL (ws://" + host + " or wss://"
                             + host + ") is required");
  auto named = protocol::host_of_relay_url(*relay);
  if (!named || *named != host)
    return protocol::invalid("the relay tag names another community");
  return std::nullopt;
}

protocol::result<storage::membership_command> admin_command(const protocol::event& ev,
                                                            const membership_context& context) {
  if (auto wrong = check_relay_tag(ev, context.host))
    return *wrong;
  auto target = protocol::named_user(ev);
  if (!target)
    return target.error();
  // A 9031 naming its own author is a leave, which the database takes from anyone.
  const bool own_removal = ev.kind == remove_member_kind && target.value() == ev.pubkey;
  if (!context.sender_manages && !own_removal)
    return protocol::rejection{protocol::reason::restricted, "your role does not allow this"};
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
membership_command_for(const protocol::event& ev, const membership_context& context,
                       std::int64_t now) {
  constexpr std::int64_t window = storage::request_window_seconds;
  if (ev.created_at > now + window || ev.created_at < now - window)
    return protocol::invalid("membership requests must be created within "
                             + std::to_string(window / 60) + " minutes of now");
  // The `-` tag (NIP-70) is optional: the apps people use do not send it for joins and leaves.
  // The protection it stands for, author == authenticated key, is checked for every request by
  // connection::admit_event.
  bool user_request = ev.kind == join_request_kind || ev.kind == leave_request_kind;
  auto command = user_request ? user_command(ev, context)
                              : admin_command(ev, context);
  if (command)
    command.value().request_id = ev.id;
  return command;
}

membership_reply reply_for(std::uint32_t kind, membership_outcome outcome,
                           const std::string& relay_url) {
  using o = membership_outcome;
  if (outcome == o::failed)
    return {false, "error: could not update membership, please retry"};
  if (outcome == o::busy)
    return {false, "rate-limited: this community has too many membership requests waiting; retry"};
  if (outcome == o::already_processed)
    return {true, "duplicate: this request was already processed"};
  if (outcome == o::banned)
    return {false, kind == join_request_kind ? "blocked: you are banned from this community"
                                             : "blocked: this pubkey is banned from this community"};
  if (outcome == o::community_full)
    return {false, "restricted: this community has reached its member limit"};
  if (outcome == o::archived)
    return {false, "restricted: this community is archived"};
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
