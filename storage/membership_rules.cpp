// SPDX-License-Identifier: MIT
#include "storage/membership_rules.hpp"

#include <algorithm>

#include "protocol/claim_seal.hpp"
#include "protocol/invite_code.hpp"
#include "protocol/sha256.hpp"

namespace comb::storage {
namespace {

using outcome = membership_outcome;

struct step {
  outcome result = outcome::nothing_to_do;
  std::uint32_t delta_kind = 0;
  bool list_changed = false;
};

step changed(std::uint32_t delta_kind) {
  return {outcome::changed, delta_kind, true};
}

/// A user's request may not take the members past the bound, a user's own join not past the
/// smaller one; an operator's may.
bool full_for(const roster& r, const membership_command& c) {
  if (!c.requested_by)
    return false;
  bool joins_self = *c.requested_by == c.subject;
  return r.size() >= (joins_self ? max_self_joined_members : max_community_members);
}

/// An add, or a join that needs no invite; an add that `lifts_ban` lifts the subject's ban
/// only once it is sure to succeed.
step add(roster& r, const membership_command& c, std::set<protocol::bytes32>& banned,
         std::set<protocol::bytes32>& owner_held, membership_plan& plan) {
  if (c.role == member_role::owner)
    return {outcome::not_allowed};
  if (r.role_of(c.subject))
    return {outcome::already_member};
  bool lift = c.lifts_ban && c.change == membership_change::add_member;
  if (banned.contains(c.subject) && !lift)
    return {outcome::banned};
  if (full_for(r, c))
    return {outcome::community_full};
  if (lift && banned.erase(c.subject) != 0) {
    owner_held.erase(c.subject);
    plan.bans.push_back({c.subject, {}, true, c.requested_by});
  }
  r.add(c.subject, c.role);
  return changed(8000);
}

/// A code works only while whoever minted it may still invite (an operator's always does): one
/// removed, demoted or banned takes their codes' power with them.
bool minter_may_invite(const roster& r, const invite_state& invite) {
  if (!invite.created_by)
    return true;
  auto role = r.role_of(*invite.created_by);
  return manages(role) || (role == member_role::member && invite.members_may_invite);
}

step claim_invite(roster& r, const membership_command& c,
                  std::map<std::string, invite_state>& invites,
                  const std::set<protocol::bytes32>& banned, std::int64_t now) {
  if (banned.contains(c.subject))
    return {outcome::banned}; // before the code: a banned user learns nothing about it
  // Before the code too: a member following an old link is a member (NIP-43's `duplicate:`,
  // which the apps take as success), and retrying a code does not use it up.
  if (r.role_of(c.subject))
    return {outcome::already_member};
  auto it = invites.find(claim_code_hash(c.invite_code));
  if (it == invites.end() || it->second.revoked)
    return {outcome::invite_invalid};
  auto& invite = it->second;
  if (!minter_may_invite(r, invite))
    return {outcome::invite_invalid};
  if (invite.expires_at <= now)
    return {outcome::invite_expired};
  if (invite.max_uses > 0 && invite.use_count >= invite.max_uses)
    return {outcome::invite_exhausted};
  if (full_for(r, c))
    return {outcome::community_full}; // the code is not used up
  ++invite.use_count;
  invite.used = true;
  r.add(c.subject, member_role::member);
  return changed(8000);
}

step remove(roster& r, const membership_command& c) {
  auto role = r.role_of(c.subject);
  if (!role)
    return {outcome::not_member};
  if (*role == member_role::owner)
    return {outcome::is_owner};
  if (c.change == membership_change::remove_member_if_role && c.expected_role != role)
    return {outcome::role_mismatch};
  r.remove(c.subject);
  return changed(8001);
}

step update_role(roster& r, const membership_command& c) {
  auto role = r.role_of(c.subject);
  if (!role)
    return {outcome::not_member};
  if (*role == member_role::owner)
    return {outcome::is_owner};
  if (c.role == member_role::owner)
    return {outcome::not_allowed};
  if (*role == c.role)
    return {outcome::nothing_to_do};
  r.set_role(c.subject, c.role);
  return {outcome::changed, 0, true};
}

/// NIP-86 banpubkey: the ban is stored whether or not they are a member; a member is removed.
/// One the owner or the operator makes joins `owner_held` at once, so an admin's unban later in
/// the same batch cannot lift it; made again by them, an admin's ban becomes theirs (write_bans
/// takes it over), so no admin lifts what the owner meant to stand.
step ban(roster& r, const membership_command& c, std::set<protocol::bytes32>& banned,
         std::set<protocol::bytes32>& owner_held, membership_plan& plan,
         const std::set<protocol::bytes32>& relay_keys) {
  if (relay_keys.contains(c.subject))
    return {outcome::not_allowed};
  auto role = r.role_of(c.subject);
  if (role == member_role::owner)
    return {outcome::is_owner};
  const bool by_owner = !c.requested_by || r.role_of(*c.requested_by) == member_role::owner;
  const bool newly = banned.insert(c.subject).second;
  const bool taken_over = !newly && by_owner && !owner_held.contains(c.subject);
  if (newly || taken_over) {
    plan.bans.push_back({c.subject, c.reason, false, c.requested_by});
    if (by_owner)
      owner_held.insert(c.subject);
  }
  if (!role)
    return {newly || taken_over ? outcome::changed : outcome::nothing_to_do};
  r.remove(c.subject);
  return changed(8001);
}

step unban(const membership_command& c, std::set<protocol::bytes32>& banned,
           std::set<protocol::bytes32>& owner_held, membership_plan& plan) {
  if (banned.erase(c.subject) == 0)
    return {outcome::nothing_to_do};
  owner_held.erase(c.subject);
  plan.bans.push_back({c.subject, {}, true, c.requested_by});
  return {outcome::changed};
}

/// Nobody banned becomes owner (an owner is never banned): COMB_OWNER_PUBKEY at a start after
/// a transfer and a ban would otherwise bring back, as owner, a key the new owner banned.
step make_owner(roster& r, const membership_command& c, member_role previous_owner_becomes,
                const std::set<protocol::bytes32>& banned) {
  auto current = r.owner();
  if (current == c.subject)
    return {outcome::already_owner};
  if (banned.contains(c.subject))
    return {outcome::banned};
  if (current)
    r.set_role(*current, previous_owner_becomes);
  bool was_member = r.role_of(c.subject).has_value();
  if (was_member)
    r.set_role(c.subject, member_role::owner);
  else
    r.add(c.subject, member_role::owner);
  return {outcome::changed, was_member ? 0u : 8000u, true};
}

step transfer(roster& r, const membership_command& c, const std::set<protocol::bytes32>& banned) {
  if (!r.owner())
    return {outcome::not_allowed};
  return make_owner(r, c, member_role::member, banned);
}

/// The role rules for requests signed by users: admins and the owner manage members, only the
/// owner grants or revokes admin, nobody touches the owner, a user may only join or leave as
/// themselves; an admin lifts no ban the owner or the operator made (`owner_held`).
bool authorized(const roster& r, const membership_command& c, const std::set<protocol::bytes32>& owner_held) {
  if (!c.requested_by)
    return true;
  const auto& requester = *c.requested_by;
  auto requester_role = r.role_of(requester);
  bool is_self = requester == c.subject;
  bool owner = requester_role == member_role::owner;
  bool admin_or_owner = owner || requester_role == member_role::admin;
  switch (c.change) {
    case membership_change::claim_membership:
    case membership_change::claim_invite: return is_self;
    case membership_change::add_member:
      return admin_or_owner && (c.role != member_role::admin || owner)
             && (!c.lifts_ban || owner || !owner_held.contains(c.subject));
    case membership_change::remove_member:
      if (is_self)
        return true; // a leave request
      // An admin removes plain members, and may ask for someone who is not one (any more):
      // nothing to do, as for the owner, rather than a refusal.
      return admin_or_owner && (owner || !manages(r.role_of(c.subject)));
    case membership_change::remove_member_if_role:
      return admin_or_owner && !is_self && (owner || c.expected_role == member_role::member);
    case membership_change::update_role: return owner && !is_self;
    case membership_change::ban_pubkey:
      return admin_or_owner && !is_self && (owner || r.role_of(c.subject) != member_role::admin);
    case membership_change::unban_pubkey: return owner || (admin_or_owner && !owner_held.contains(c.subject));
    default: return false; // owner changes, backfill and repair are operator paths
  }
}

step plan_one(roster& members, const membership_command& c,
              std::map<std::string, invite_state>& invites,
              const std::vector<protocol::bytes32>& allowlist, std::set<protocol::bytes32>& banned,
              std::int64_t now, membership_plan& plan,
              const std::set<protocol::bytes32>& relay_keys,
              std::set<protocol::bytes32>& owner_held) {
  if (!authorized(members, c, owner_held)) {
    // The owner is reported as such even to someone who may not touch them.
    bool targets_owner = members.role_of(c.subject) == member_role::owner
                         && c.change != membership_change::claim_invite;
    return {targets_owner ? outcome::is_owner : outcome::not_allowed};
  }
  switch (c.change) {
    case membership_change::add_member:
    case membership_change::claim_membership: return add(members, c, banned, owner_held, plan);
    case membership_change::claim_invite: return claim_invite(members, c, invites, banned, now);
    case membership_change::remove_member:
    case membership_change::remove_member_if_role: return remove(members, c);
    case membership_change::update_role: return update_role(members, c);
    case membership_change::provision_owner: return make_owner(members, c, member_role::admin, banned);
    case membership_change::transfer_owner: return transfer(members, c, banned);
    case membership_change::backfill_allowlist:
      if (members.empty() && !allowlist.empty()) {
        for (const auto& pubkey : allowlist)
          members.add(pubkey, member_role::member);
        return {outcome::changed, 0, true};
      }
      return {};
    case membership_change::republish: return {outcome::changed, 0, true};
    case membership_change::ban_pubkey: return ban(members, c, banned, owner_held, plan, relay_keys);
    case membership_change::unban_pubkey: return unban(c, banned, owner_held, plan);
  }
  return {};
}

} // namespace

roster::roster(std::vector<member> members) {
  slots_.reserve(members.size() + 16);
  index_.reserve(members.size() + 16);
  for (const auto& m : members)
    if (index_.emplace(m.pubkey, slots_.size()).second)
      slots_.push_back({m, true});
}

std::optional<member_role> roster::role_of(const protocol::bytes32& pubkey) const {
  auto it = index_.find(pubkey);
  if (it == index_.end())
    return std::nullopt;
  return slots_[it->second].entry.role;
}

std::vector<member> roster::members() const {
  std::vector<member> out;
  out.reserve(index_.size());
  for (const auto& s : slots_)
    if (s.present)
      out.push_back(s.entry);
  return out;
}

std::optional<protocol::bytes32> roster::owner() const {
  for (const auto& s : slots_)
    if (s.present && s.entry.role == member_role::owner)
      return s.entry.pubkey;
  return std::nullopt;
}

roster::touch& roster::touched(const protocol::bytes32& pubkey) {
  auto [it, first] = touched_.try_emplace(pubkey);
  if (first) {
    it->second.original = role_of(pubkey);
    touch_order_.push_back(pubkey);
  }
  return it->second;
}

void roster::add(const protocol::bytes32& pubkey, member_role role) {
  if (index_.contains(pubkey))
    return;
  auto& t = touched(pubkey);
  t.readded = t.readded || t.original.has_value();
  index_.emplace(pubkey, slots_.size());
  slots_.push_back({{pubkey, role}, true});
}

void roster::remove(const protocol::bytes32& pubkey) {
  auto it = index_.find(pubkey);
  if (it == index_.end())
    return;
  (void)touched(pubkey);
  slots_[it->second].present = false;
  index_.erase(it);
}

void roster::set_role(const protocol::bytes32& pubkey, member_role role) {
  auto it = index_.find(pubkey);
  if (it == index_.end())
    return;
  (void)touched(pubkey);
  slots_[it->second].entry.role = role;
}

member_changes roster::changes() const {
  member_changes out;
  std::vector<std::size_t> added_slots;
  for (const auto& pubkey : touch_order_) {
    const auto& t = touched_.at(pubkey);
    auto now = index_.find(pubkey);
    bool present = now != index_.end();
    if (t.original && (!present || t.readded))
      out.removed.push_back(pubkey);
    if (present && (!t.original || t.readded))
      added_slots.push_back(now->second);
    if (t.original && present && !t.readded) {
      const auto& entry = slots_[now->second].entry;
      if (entry.role != *t.original)
        (entry.role == member_role::owner ? out.promoted : out.demoted).push_back(entry);
    }
  }
  std::sort(added_slots.begin(), added_slots.end());
  for (auto i : added_slots)
    out.added.push_back(slots_[i].entry);
  return out;
}

std::string invite_code_hash(std::string_view code) {
  return protocol::to_hex(protocol::sha256(protocol::without_blanks(code)));
}

std::string claim_code_hash(std::string_view claim) {
  return invite_code_hash(protocol::typed_invite_code(claim));
}

invite_code_hashes invite_hashes(const protocol::key_pair& relay_key, std::int64_t community_id,
                                 std::string_view code) {
  return {protocol::claim_lookup_hash(relay_key, community_id, protocol::typed_invite_code(code)),
          claim_code_hash(code)};
}

membership_outcome repeated_outcome(const roster& members, const membership_command& command,
                                    membership_outcome first) {
  switch (first) {
    case outcome::changed:
    case outcome::already_member:
    case outcome::already_owner:
    case outcome::nothing_to_do:
    case outcome::already_processed:
    case outcome::failed: break;
    default: return first; // a refusal
  }
  bool join = command.change == membership_change::claim_invite
              || command.change == membership_change::claim_membership;
  return join && members.role_of(command.subject) ? outcome::already_member
                                                  : outcome::already_processed;
}

std::vector<membership_command>
joins_in_closed_community(std::span<const membership_command> commands) {
  std::vector<membership_command> out(commands.begin(), commands.end());
  for (auto& c : out)
    if (c.change == membership_change::claim_membership && c.requested_by) {
      c.change = membership_change::claim_invite;
      c.added_by = "invite";
    }
  return out;
}

membership_plan plan_membership(roster& members, std::span<const membership_command> commands,
                                std::map<std::string, invite_state>& invites,
                                const std::vector<protocol::bytes32>& allowlist,
                                std::set<protocol::bytes32>& banned, std::int64_t now,
                                const std::vector<std::optional<membership_outcome>>& earlier,
                                const std::set<protocol::bytes32>& relay_keys,
                                const std::set<protocol::bytes32>& owner_held) {
  membership_plan plan;
  std::set<protocol::bytes32> held = owner_held; // and the bans the batch's owner makes
  std::map<protocol::bytes32, membership_outcome> in_batch;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const auto& c = commands[i];
    std::optional<membership_outcome> first = i < earlier.size() ? earlier[i] : std::nullopt;
    if (!first && c.request_id)
      if (auto seen = in_batch.find(*c.request_id); seen != in_batch.end())
        first = seen->second;
    step s = first ? step{repeated_outcome(members, c, *first)}
                   : plan_one(members, c, invites, allowlist, banned, now, plan, relay_keys, held);
    if (c.request_id && !first)
      in_batch.emplace(*c.request_id, s.result);
    plan.outcomes.push_back(s.result);
    plan.delta_kinds.push_back(s.delta_kind);
    plan.list_changed = plan.list_changed || s.list_changed;
  }
  return plan;
}

} // namespace comb::storage
