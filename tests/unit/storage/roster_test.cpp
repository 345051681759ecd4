// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstring>

#include "storage/membership_rules.hpp"

using namespace comb::storage;
using comb::protocol::bytes32;

namespace {

bytes32 key(std::uint8_t byte) {
  bytes32 out{};
  out.fill(byte);
  return out;
}

std::vector<bytes32> keys_of(const std::vector<member>& members) {
  std::vector<bytes32> out;
  for (const auto& m : members)
    out.push_back(m.pubkey);
  return out;
}

/// A user's request: `change` of `subject`, asked by `by`.
membership_command request(membership_change change, bytes32 subject, bytes32 by) {
  membership_command c;
  c.change = change;
  c.subject = subject;
  c.requested_by = by;
  return c;
}

roster three_members() {
  return roster({{key(1), member_role::owner}, {key(2), member_role::admin},
                 {key(3), member_role::member}});
}

} // namespace

TEST_CASE("a roster nobody touched has no changes", "[unit][storage][roster]") {
  auto r = three_members();
  auto changes = r.changes();
  CHECK(changes.added.empty());
  CHECK(changes.removed.empty());
  CHECK(changes.demoted.empty());
  CHECK(changes.promoted.empty());
  CHECK(r.role_of(key(2)) == member_role::admin);
  CHECK_FALSE(r.role_of(key(9)));
}

TEST_CASE("new members come out in list order, removals as keys", "[unit][storage][roster]") {
  auto r = three_members();
  r.add(key(7), member_role::member);
  r.remove(key(3));
  r.add(key(5), member_role::admin);
  auto changes = r.changes();
  CHECK(keys_of(changes.added) == std::vector{key(7), key(5)});
  CHECK(changes.added[1].role == member_role::admin);
  CHECK(changes.removed == std::vector{key(3)});
  CHECK(keys_of(r.members()) == std::vector{key(1), key(2), key(7), key(5)});
}

TEST_CASE("a key added and removed in one batch changes nothing", "[unit][storage][roster]") {
  auto r = three_members();
  r.add(key(8), member_role::member);
  r.remove(key(8));
  auto changes = r.changes();
  CHECK(changes.added.empty());
  CHECK(changes.removed.empty());
  CHECK(r.members().size() == 3);
}

TEST_CASE("a member who leaves and joins again moves to the end", "[unit][storage][roster]") {
  auto r = three_members();
  r.remove(key(2));
  r.add(key(2), member_role::member);
  auto changes = r.changes();
  CHECK(changes.removed == std::vector{key(2)});
  CHECK(keys_of(changes.added) == std::vector{key(2)});
  CHECK(changes.demoted.empty());
  CHECK(keys_of(r.members()) == std::vector{key(1), key(3), key(2)});
}

TEST_CASE("an ownership transfer is one demotion and one promotion", "[unit][storage][roster]") {
  auto r = three_members();
  r.set_role(key(1), member_role::member);
  r.set_role(key(3), member_role::owner);
  r.set_role(key(2), member_role::member);
  r.set_role(key(2), member_role::admin); // back where it started: no write
  auto changes = r.changes();
  REQUIRE(changes.demoted.size() == 1);
  CHECK(changes.demoted[0].pubkey == key(1));
  CHECK(changes.demoted[0].role == member_role::member);
  REQUIRE(changes.promoted.size() == 1);
  CHECK(changes.promoted[0].pubkey == key(3));
  CHECK(r.owner() == key(3));
}

TEST_CASE("adding a present key or removing an absent one is ignored", "[unit][storage][roster]") {
  auto r = three_members();
  r.add(key(2), member_role::member);
  r.remove(key(9));
  r.set_role(key(9), member_role::admin);
  CHECK(r.role_of(key(2)) == member_role::admin);
  auto changes = r.changes();
  CHECK(changes.added.empty());
  CHECK(changes.removed.empty());
  CHECK(changes.demoted.empty());
}

TEST_CASE("a ban in a batch removes the member and refuses their later join",
          "[unit][storage][roster]") {
  auto r = three_members();
  std::map<std::string, invite_state> invites;
  std::set<bytes32> banned;
  auto ban = [](bytes32 subject, bytes32 by) {
    membership_command c = request(membership_change::ban_pubkey, subject, by);
    c.reason = "spam";
    return c;
  };
  membership_command join = request(membership_change::claim_membership, key(3), key(3));
  membership_command unban = ban(key(3), key(2));
  unban.change = membership_change::unban_pubkey;
  std::vector<membership_command> batch{ban(key(3), key(2)), join, ban(key(1), key(2)),
                                        ban(key(2), key(2)), unban, join};
  auto plan = plan_membership(r, batch, invites, {}, banned, 0);
  CHECK(plan.outcomes == std::vector<membership_outcome>{
                           membership_outcome::changed, membership_outcome::banned,
                           membership_outcome::is_owner, membership_outcome::not_allowed,
                           membership_outcome::changed, membership_outcome::changed});
  CHECK(plan.delta_kinds == std::vector<std::uint32_t>{8001, 0, 0, 0, 0, 8000});
  REQUIRE(plan.bans.size() == 2);
  CHECK(plan.bans[0].pubkey == key(3));
  CHECK(plan.bans[0].reason == "spam");
  CHECK_FALSE(plan.bans[0].lifted);
  CHECK(plan.bans[1].lifted);
  CHECK(banned.empty());
  CHECK(r.role_of(key(3)) == member_role::member);
}

TEST_CASE("an admin lifts no ban the owner or the operator made, stored or in the same batch",
          "[unit][storage][roster]") {
  auto r = three_members();
  std::map<std::string, invite_state> invites;
  std::set<bytes32> banned{key(6)};
  const std::set<bytes32> owner_held{key(6)}; // stored, made by the owner
  auto by = [](membership_change change, bytes32 subject, std::optional<bytes32> requester) {
    membership_command c = request(change, subject, requester.value_or(bytes32{}));
    c.requested_by = requester;
    return c;
  };
  using mc = membership_change;
  std::vector<membership_command> batch{
    by(mc::ban_pubkey, key(3), key(1)),   by(mc::unban_pubkey, key(3), key(2)),   // the owner's
    by(mc::ban_pubkey, key(5), std::nullopt), by(mc::unban_pubkey, key(5), key(2)), // the operator's
    by(mc::unban_pubkey, key(6), key(2)),                                         // stored
    by(mc::unban_pubkey, key(3), key(1)), by(mc::ban_pubkey, key(3), key(2)),     // lifted, banned again
    by(mc::unban_pubkey, key(3), key(2))};                                        // by an admin: theirs
  auto plan = plan_membership(r, batch, invites, {}, banned, 0, {}, {}, owner_held);
  using o = membership_outcome;
  CHECK(plan.outcomes == std::vector<o>{o::changed, o::not_allowed, o::changed, o::not_allowed,
                                        o::not_allowed, o::changed, o::changed, o::changed});
  CHECK(banned == std::set<bytes32>{key(5), key(6)});
}

TEST_CASE("nobody bans the community's key nor the relay key it is derived from", "[unit][storage][roster]") {
  auto r = three_members();
  std::map<std::string, invite_state> invites;
  std::set<bytes32> banned;
  membership_command by_owner = request(membership_change::ban_pubkey, key(9), key(1));
  membership_command by_operator = request(membership_change::ban_pubkey, key(8), key(1));
  by_operator.requested_by.reset();
  std::vector<membership_command> batch{by_owner, by_operator};
  auto plan = plan_membership(r, batch, invites, {}, banned, 0, {}, {key(8), key(9)});
  CHECK(plan.outcomes == std::vector<membership_outcome>{membership_outcome::not_allowed,
                                                         membership_outcome::not_allowed});
  CHECK(plan.bans.empty());
  CHECK(banned.empty());
}

TEST_CASE("a user's invite code works only while its minter may still invite", "[unit][storage][roster]") {
  auto r = roster({{key(1), member_role::owner}, {key(2), member_role::admin},
                   {key(3), member_role::member}, {key(4), member_role::admin}});
  std::map<std::string, invite_state> invites;
  auto minted_by = [&](const std::string& code, std::optional<bytes32> minter, bool members_may) {
    invite_state invite;
    invite.expires_at = 1000;
    invite.created_by = minter;
    invite.members_may_invite = members_may;
    invites[invite_code_hash(code)] = invite;
  };
  minted_by("admin", key(2), false);
  minted_by("member-allowed", key(3), true);
  minted_by("member-not-allowed", key(3), false);
  minted_by("stranger", key(8), true);
  minted_by("operator", std::nullopt, false);
  minted_by("removed-admin", key(4), false);
  auto join = [](std::uint8_t who, const std::string& code) {
    membership_command c = request(membership_change::claim_invite, key(who), key(who));
    c.invite_code = code;
    return c;
  };
  std::set<bytes32> banned;
  // key 4 is removed by the owner earlier in the same batch: their code dies with the removal.
  std::vector<membership_command> batch{join(10, "admin"), join(11, "member-allowed"),
                                        join(12, "member-not-allowed"), join(13, "stranger"),
                                        join(14, "operator"),
                                        request(membership_change::remove_member, key(4), key(1)),
                                        join(15, "removed-admin")};
  using o = membership_outcome;
  CHECK(plan_membership(r, batch, invites, {}, banned, 100).outcomes
        == std::vector<membership_outcome>{o::changed, o::changed, o::invite_invalid,
                                           o::invite_invalid, o::changed, o::changed,
                                           o::invite_invalid});
  CHECK(invites[invite_code_hash("stranger")].use_count == 0);
}

TEST_CASE("an admin asking to remove someone who is not a member is told there is nothing to do",
          "[unit][storage][roster]") {
  auto r = three_members();
  std::map<std::string, invite_state> invites;
  std::set<bytes32> banned;
  auto removal = [](bytes32 subject, bytes32 by) {
    return request(membership_change::remove_member, subject, by);
  };
  std::vector<membership_command> batch{removal(key(9), key(2)), removal(key(3), key(2)),
                                        removal(key(3), key(2)), removal(key(1), key(2))};
  auto plan = plan_membership(r, batch, invites, {}, banned, 0);
  CHECK(plan.outcomes == std::vector<membership_outcome>{
                           membership_outcome::not_member, membership_outcome::changed,
                           membership_outcome::not_member, membership_outcome::is_owner});
  // Another admin stays out of an admin's reach.
  auto with_two_admins = roster({{key(1), member_role::owner}, {key(2), member_role::admin},
                                 {key(4), member_role::admin}});
  std::vector<membership_command> one{removal(key(4), key(2))};
  CHECK(plan_membership(with_two_admins, one, invites, {}, banned, 0).outcomes
        == std::vector<membership_outcome>{membership_outcome::not_allowed});
}

TEST_CASE("a member following an old or spent invite is told they are a member",
          "[unit][storage][roster]") {
  auto r = three_members();
  std::map<std::string, invite_state> invites;
  invite_state expired;
  expired.expires_at = 10;
  invites[invite_code_hash("old")] = expired;
  std::set<bytes32> banned;
  membership_command join = request(membership_change::claim_invite, key(3), key(3));
  join.invite_code = "old";
  membership_command unknown = join;
  unknown.invite_code = "never-minted";
  membership_command stranger = join;
  stranger.subject = stranger.requested_by.emplace(key(8));
  std::vector<membership_command> batch{join, unknown, stranger};
  CHECK(plan_membership(r, batch, invites, {}, banned, 100).outcomes
        == std::vector<membership_outcome>{membership_outcome::already_member,
                                           membership_outcome::already_member,
                                           membership_outcome::invite_expired});
}

namespace {

/// The owner (key 1) and plain members up to `size`.
roster roster_of_size(std::size_t size) {
  std::vector<member> many{{key(1), member_role::owner}};
  for (std::size_t i = 1; i < size; ++i) {
    bytes32 k{};
    std::memcpy(k.data(), &i, sizeof i);
    k[31] = 0xee;
    many.push_back({k, member_role::member});
  }
  return roster(std::move(many));
}

/// A join with no code (key 7), a join with a fresh code (key 8), the owner's add (key 9), and
/// the operator's add (key 10), planned together against `r`.
struct joins_and_adds {
  std::map<std::string, invite_state> invites;
  std::vector<membership_outcome> outcomes;

  explicit joins_and_adds(roster& r) {
    invite_state fresh;
    fresh.expires_at = 1000;
    invites[invite_code_hash("code")] = fresh;
    membership_command open_join = request(membership_change::claim_membership, key(7), key(7));
    membership_command coded_join = request(membership_change::claim_invite, key(8), key(8));
    coded_join.invite_code = "code";
    membership_command owner_add = request(membership_change::add_member, key(9), key(1));
    membership_command operator_add = request(membership_change::add_member, key(10), key(1));
    operator_add.requested_by.reset();
    std::vector<membership_command> batch{open_join, coded_join, owner_add, operator_add};
    std::set<bytes32> banned;
    outcomes = plan_membership(r, batch, invites, {}, banned, 100).outcomes;
  }
};

} // namespace

TEST_CASE("a full community refuses users' joins and adds, not the operator's", "[unit][storage][roster]") {
  auto r = roster_of_size(max_community_members);
  REQUIRE(r.size() == max_community_members);
  joins_and_adds plan(r);
  CHECK(plan.outcomes == std::vector<membership_outcome>{
                           membership_outcome::community_full, membership_outcome::community_full,
                           membership_outcome::community_full, membership_outcome::changed});
  CHECK(plan.invites[invite_code_hash("code")].use_count == 0); // the code is not used up
  CHECK(r.size() == max_community_members + 1);
}

TEST_CASE("users' own joins stop short of the bound, leaving room the owner and admins can add into",
          "[unit][storage][roster]") {
  auto r = roster_of_size(max_self_joined_members);
  REQUIRE(r.size() == max_self_joined_members);
  joins_and_adds plan(r);
  CHECK(plan.outcomes == std::vector<membership_outcome>{
                           membership_outcome::community_full, membership_outcome::community_full,
                           membership_outcome::changed, membership_outcome::changed});
  CHECK(r.size() == max_self_joined_members + 2);
}

TEST_CASE("an invite code pasted with spaces or a newline around it is the code", "[unit][storage][roster]") {
  CHECK(invite_code_hash(" 0a1b2c\n") == invite_code_hash("0a1b2c"));
  CHECK(invite_code_hash("\t0a1b2c\r\n") == invite_code_hash("0a1b2c"));
  CHECK(invite_code_hash("0a 1b") != invite_code_hash("0a1b"));
  CHECK(invite_code_hash("  ") == invite_code_hash(""));
}

TEST_CASE("an allowpubkey lifts the ban only with the add, and only where its caller may lift it",
          "[unit][storage][roster]") {
  auto r = three_members();
  std::map<std::string, invite_state> invites;
  std::set<bytes32> banned{key(5), key(6), key(7)};
  const std::set<bytes32> owner_held{key(6)};
  auto allow = [](bytes32 subject, bytes32 by) {
    membership_command c = request(membership_change::add_member, subject, by);
    c.lifts_ban = true;
    return c;
  };
  membership_command plain_add = request(membership_change::add_member, key(7), key(2));
  std::vector<membership_command> batch{plain_add, allow(key(5), key(2)), allow(key(6), key(2)),
                                        allow(key(6), key(1))};
  auto plan = plan_membership(r, batch, invites, {}, banned, 0, {}, {}, owner_held);
  using o = membership_outcome;
  CHECK(plan.outcomes == std::vector<o>{o::banned, o::changed, o::not_allowed, o::changed});
  CHECK(banned == std::set<bytes32>{key(7)});
  REQUIRE(plan.bans.size() == 2);
  CHECK(plan.bans[0].lifted);
  CHECK(r.role_of(key(5)) == member_role::member);
  CHECK(r.role_of(key(6)) == member_role::member);

  // A full community: the add is refused, and the ban stays.
  auto full = roster_of_size(max_community_members);
  std::set<bytes32> still{key(250)};
  membership_command allowed = allow(key(250), key(1));
  auto refused = plan_membership(full, std::span(&allowed, 1), invites, {}, still, 0);
  CHECK(refused.outcomes == std::vector<o>{o::community_full});
  CHECK(still == std::set<bytes32>{key(250)});
  CHECK(refused.bans.empty());
}
