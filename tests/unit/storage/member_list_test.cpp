// SPDX-License-Identifier: MIT
// The NIP-43 shapes comb signs (13534 member tags, 33534 role definitions) and the start-up
// upgrade's test of whether a stored list is in the current shape.
#include <catch2/catch.hpp>

#include <set>

#include "protocol/event_check.hpp"
#include "storage/member_list.hpp"
#include "storage/membership_rules.hpp"

using namespace comb;
using namespace comb::storage;
using protocol::bytes32;

namespace {

const auto relay_key = protocol::key_pair::generate();

bytes32 key(std::uint8_t byte) {
  bytes32 out{};
  out.fill(byte);
  return out;
}

std::string hex(std::uint8_t byte) {
  return protocol::to_hex(key(byte));
}

protocol::event list_with(std::vector<protocol::tag> tags) {
  protocol::event ev;
  ev.kind = member_list_kind;
  ev.tags = std::move(tags);
  return ev;
}

} // namespace

TEST_CASE("a 13534 tags plain members by key alone, owner and admins with their role id",
          "[unit][storage][nip43]") {
  std::vector<member> members{{key(1), member_role::owner},
                              {key(2), member_role::member},
                              {key(3), member_role::admin}};
  auto list = sign_member_list(relay_key, members, 1000);
  CHECK(list.kind == 13534);
  CHECK(list.pubkey == relay_key.public_key());
  CHECK_FALSE(protocol::verify_event(list));
  CHECK(list.tags == std::vector<protocol::tag>{{"-"},
                                                {"member", hex(1), "owner"},
                                                {"member", hex(2)},
                                                {"member", hex(3), "admin"}});
  CHECK(members_of_list(list) == members);
}

TEST_CASE("role definitions are relay-signed 33534s keyed by the role id", "[unit][storage][nip43]") {
  auto owner = sign_role_definition(relay_key, member_role::owner, 1000);
  CHECK(owner.kind == 33534);
  CHECK(owner.pubkey == relay_key.public_key());
  CHECK(owner.created_at == 1000);
  CHECK_FALSE(protocol::verify_event(owner));
  CHECK(owner.tags[0] == protocol::tag{"-"});
  CHECK(protocol::d_tag(owner) == "owner");
  CHECK(*protocol::first_tag_value(owner, "label") == "Owner");
  CHECK(*protocol::first_tag_value(owner, "order") == "1");
  auto admin = sign_role_definition(relay_key, member_role::admin, 1000);
  CHECK(protocol::d_tag(admin) == "admin");
  CHECK(*protocol::first_tag_value(admin, "label") == "Admin");
  CHECK(*protocol::first_tag_value(admin, "order") == "2");
  CHECK(role_id(member_role::owner) == "owner");
  CHECK(role_id(member_role::admin) == "admin");
  CHECK_FALSE(role_id(member_role::member));
}

TEST_CASE("the roles a list uses come owner first, plain membership is none",
          "[unit][storage][nip43]") {
  CHECK(roles_used({}).empty());
  CHECK(roles_used({{key(2), member_role::member}}).empty());
  CHECK(roles_used({{key(3), member_role::admin}, {key(1), member_role::owner}})
        == std::vector{member_role::owner, member_role::admin});
  CHECK(roles_used({{key(1), member_role::owner}, {key(2), member_role::member}})
        == std::vector{member_role::owner});
}

TEST_CASE("lists in comb's older shape are read, and told apart from the current one",
          "[unit][storage][nip43]") {
  auto old = list_with({{"-"}, {"member", hex(1), "owner"}, {"member", hex(2), "member"}});
  CHECK(members_of_list(old)
        == std::vector<member>{{key(1), member_role::owner}, {key(2), member_role::member}});
  std::set<std::string> both{"owner", "admin"};
  CHECK_FALSE(list_in_current_shape(old, both));

  auto current = list_with({{"-"}, {"member", hex(1), "owner"}, {"member", hex(2)}});
  CHECK(list_in_current_shape(current, both));
  CHECK(list_in_current_shape(current, {"owner"}));
  // Same tags as an older comb wrote for an owner alone, but no definition of "owner" yet.
  CHECK_FALSE(list_in_current_shape(current, {}));
  auto with_admin = list_with({{"-"}, {"member", hex(1), "owner"}, {"member", hex(3), "admin"}});
  CHECK_FALSE(list_in_current_shape(with_admin, {"owner"}));
  CHECK(list_in_current_shape(list_with({{"-"}}), {}));
  CHECK(list_in_current_shape(list_with({{"-"}, {"member", hex(2)}}), {}));
}

TEST_CASE("a request processed before changes nothing", "[unit][storage][roster]") {
  roster r({{key(1), member_role::owner}, {key(2), member_role::member}});
  std::map<std::string, invite_state> invites;
  std::set<protocol::bytes32> banned;
  membership_command join{membership_change::claim_membership, key(2), member_role::member,
                          std::nullopt, {}, "join", key(2), key(40), {}};
  membership_command newcomer = join;
  newcomer.subject = key(3);
  newcomer.requested_by = key(3);
  newcomer.request_id = key(41);
  membership_command leave{membership_change::remove_member, key(2), member_role::member,
                           std::nullopt, {}, {}, key(2), key(42), {}};
  std::vector commands{join, newcomer, leave};
  using o = membership_outcome;
  auto plan = plan_membership(r, commands, invites, {}, banned, 0, {o::changed, o::changed, o::changed});
  CHECK(plan.outcomes == std::vector{o::already_member, o::already_processed, o::already_processed});
  CHECK_FALSE(plan.list_changed);
  CHECK(plan.delta_kinds == std::vector<std::uint32_t>{0, 0, 0});
  CHECK(r.members().size() == 2);

  // Only the fresh one acts.
  auto fresh = plan_membership(r, commands, invites, {}, banned, 0, {std::nullopt, std::nullopt, o::changed});
  CHECK(fresh.outcomes == std::vector{o::already_member, o::changed, o::already_processed});
  CHECK(r.role_of(key(3)) == member_role::member);
  CHECK(r.role_of(key(2)) == member_role::member);
}

TEST_CASE("a refused request is refused the same way when it comes again", "[unit][storage][roster]") {
  roster r({{key(1), member_role::owner}});
  std::map<std::string, invite_state> invites;
  std::set<protocol::bytes32> banned;
  membership_command join{membership_change::claim_invite, key(2), member_role::member,
                          std::nullopt, "bad-code", "invite", key(2), key(50), {}};
  using o = membership_outcome;
  auto plan = plan_membership(r, std::span(&join, 1), invites, {}, banned, 0, {o::invite_expired});
  CHECK(plan.outcomes == std::vector{o::invite_expired});
  CHECK(repeated_outcome(r, join, o::is_owner) == o::is_owner);
  CHECK(repeated_outcome(r, join, o::changed) == o::already_processed);
  CHECK(repeated_outcome(r, join, o::failed) == o::already_processed);
}

TEST_CASE("a request id repeated within one batch acts once", "[unit][storage][roster]") {
  roster r({{key(1), member_role::owner}});
  std::map<std::string, invite_state> invites;
  std::set<protocol::bytes32> banned;
  membership_command add{membership_change::add_member, key(5), member_role::member,
                         std::nullopt, {}, "admin", key(1), key(60), {}};
  membership_command remove{membership_change::remove_member, key(5), member_role::member,
                            std::nullopt, {}, {}, key(1), key(61), {}};
  std::vector commands{add, remove, add, remove};
  auto plan = plan_membership(r, commands, invites, {}, banned, 0);
  using o = membership_outcome;
  CHECK(plan.outcomes == std::vector{o::changed, o::changed, o::already_processed, o::already_processed});
  CHECK_FALSE(r.role_of(key(5)));
  // A refused first command's repeat in the batch is refused alike.
  membership_command stranger{membership_change::remove_member, key(9), member_role::member,
                              std::nullopt, {}, {}, key(1), key(62), {}};
  std::vector twice{stranger, stranger};
  CHECK(plan_membership(r, twice, invites, {}, banned, 0).outcomes == std::vector{o::not_member, o::not_member});
}

TEST_CASE("outcome names read back", "[unit][storage]") {
  for (std::size_t i = 0; i < membership_outcome_count; ++i) {
    auto outcome = static_cast<membership_outcome>(i);
    CHECK(parse_outcome(outcome_name(outcome)) == outcome);
  }
  CHECK_FALSE(parse_outcome("nonsense"));
}
