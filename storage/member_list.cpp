// SPDX-License-Identifier: MIT
#include "storage/member_list.hpp"

#include <algorithm>

#include "protocol/canonical_json.hpp"

namespace comb::storage {
namespace {

protocol::event sign(const protocol::key_pair& key, protocol::event ev) {
  ev.pubkey = key.public_key();
  ev.id = protocol::compute_id(ev);
  ev.sig = key.sign(ev.id);
  return ev;
}

} // namespace

std::int64_t next_list_time(std::int64_t now, std::int64_t newest_list_at) noexcept {
  return std::max(now, newest_list_at + 1);
}

protocol::event sign_member_list(const protocol::key_pair& relay_key,
                                 const std::vector<member>& members, std::int64_t created_at) {
  protocol::event ev;
  ev.kind = member_list_kind;
  ev.created_at = created_at;
  ev.tags.reserve(members.size() + 1);
  ev.tags.push_back({"-"});
  for (const auto& m : members) {
    auto id = role_id(m.role);
    if (id)
      ev.tags.push_back({"member", protocol::to_hex(m.pubkey), std::string(*id)});
    else
      ev.tags.push_back({"member", protocol::to_hex(m.pubkey)});
  }
  return sign(relay_key, std::move(ev));
}

std::optional<std::string_view> role_id(member_role role) noexcept {
  switch (role) {
    case member_role::owner: return "owner";
    case member_role::admin: return "admin";
    case member_role::member: return std::nullopt;
  }
  return std::nullopt;
}

std::vector<member_role> roles_used(const std::vector<member>& members) {
  bool owner = false, admin = false;
  for (const auto& m : members) {
    owner = owner || m.role == member_role::owner;
    admin = admin || m.role == member_role::admin;
  }
  std::vector<member_role> roles;
  if (owner)
    roles.push_back(member_role::owner);
  if (admin)
    roles.push_back(member_role::admin);
  return roles;
}

protocol::event sign_role_definition(const protocol::key_pair& relay_key, member_role role,
                                     std::int64_t created_at) {
  bool owner = role == member_role::owner;
  protocol::event ev;
  ev.kind = role_definition_kind;
  ev.created_at = created_at;
  ev.tags = {{"-"},
             {"d", std::string(role_id(role).value_or("admin"))},
             {"label", owner ? "Owner" : "Admin"},
             {"description", owner ? "Owns the community; grants and removes admins"
                                   : "Adds and removes members, invites"},
             {"order", owner ? "1" : "2"}};
  return sign(relay_key, std::move(ev));
}

bool list_in_current_shape(const protocol::event& list,
                           const std::set<std::string>& defined_role_ids) {
  for (const auto& t : list.tags) {
    if (t.empty() || t[0] != "member")
      continue;
    for (std::size_t i = 2; i < t.size(); ++i)
      if (t[i] == role_name(member_role::member) || !defined_role_ids.contains(t[i]))
        return false;
  }
  return true;
}

protocol::event sign_member_delta(const protocol::key_pair& relay_key, std::uint32_t kind,
                                  const protocol::bytes32& subject, std::int64_t created_at) {
  protocol::event ev;
  ev.kind = kind;
  ev.created_at = created_at;
  ev.tags = {{"-"}, {"p", protocol::to_hex(subject)}};
  return sign(relay_key, std::move(ev));
}

std::optional<std::vector<member>> members_of_list(const protocol::event& list) {
  std::vector<member> members;
  for (const auto& t : list.tags) {
    if (t.empty() || t[0] != "member")
      continue;
    auto pubkey = t.size() >= 2 ? protocol::array_from_hex<32>(t[1]) : std::nullopt;
    // A two-element tag is a plain member; a third element is a role id, or "member" in the
    // shape comb wrote before NIP-43 defined roles.
    auto role = t.size() >= 3 ? parse_role(t[2]) : std::optional(member_role::member);
    if (!pubkey || !role)
      return std::nullopt;
    members.push_back({*pubkey, *role});
  }
  return members;
}

std::string_view role_name(member_role role) noexcept {
  switch (role) {
    case member_role::owner: return "owner";
    case member_role::admin: return "admin";
    case member_role::member: return "member";
  }
  return "member";
}

std::optional<member_role> parse_role(std::string_view name) noexcept {
  if (name == "owner")
    return member_role::owner;
  if (name == "admin")
    return member_role::admin;
  if (name == "member")
    return member_role::member;
  return std::nullopt;
}

protocol::community_standing standing_of(std::optional<member_role> role) noexcept {
  if (!role)
    return protocol::community_standing::outsider;
  switch (*role) {
    case member_role::owner: return protocol::community_standing::owner;
    case member_role::admin: return protocol::community_standing::admin;
    case member_role::member: return protocol::community_standing::member;
  }
  return protocol::community_standing::member;
}

std::string_view change_name(membership_change change) noexcept {
  switch (change) {
    case membership_change::add_member: return "add_member";
    case membership_change::claim_membership: return "claim_membership";
    case membership_change::claim_invite: return "claim_invite";
    case membership_change::remove_member: return "remove_member";
    case membership_change::remove_member_if_role: return "remove_member_if_role";
    case membership_change::update_role: return "update_role";
    case membership_change::provision_owner: return "provision_owner";
    case membership_change::transfer_owner: return "transfer_owner";
    case membership_change::backfill_allowlist: return "backfill_allowlist";
    case membership_change::republish: return "republish";
    case membership_change::ban_pubkey: return "ban_pubkey";
    case membership_change::unban_pubkey: return "unban_pubkey";
  }
  return "unknown";
}

std::optional<membership_outcome> parse_outcome(std::string_view name) noexcept {
  for (std::size_t i = 0; i < membership_outcome_count; ++i) {
    auto outcome = static_cast<membership_outcome>(i);
    if (outcome_name(outcome) == name)
      return outcome;
  }
  return std::nullopt;
}

std::string_view outcome_name(membership_outcome outcome) noexcept {
  switch (outcome) {
    case membership_outcome::changed: return "changed";
    case membership_outcome::already_member: return "already_member";
    case membership_outcome::not_member: return "not_member";
    case membership_outcome::is_owner: return "is_owner";
    case membership_outcome::role_mismatch: return "role_mismatch";
    case membership_outcome::already_owner: return "already_owner";
    case membership_outcome::invite_invalid: return "invite_invalid";
    case membership_outcome::invite_expired: return "invite_expired";
    case membership_outcome::invite_exhausted: return "invite_exhausted";
    case membership_outcome::not_allowed: return "not_allowed";
    case membership_outcome::nothing_to_do: return "nothing_to_do";
    case membership_outcome::already_processed: return "already_processed";
    case membership_outcome::banned: return "banned";
    case membership_outcome::community_full: return "community_full";
    case membership_outcome::busy: return "busy";
    case membership_outcome::archived: return "archived";
    case membership_outcome::failed: return "failed";
  }
  return "failed";
}

} // namespace comb::storage
