// SPDX-License-Identifier: MIT
// Joins, leaves and 9030-9032 as the apps send them: who may send them (the connection's
// authenticated author), what they must carry, and who may publish in a closed community.
#include <catch2/catch.hpp>

#include "actors/community/membership_requests.hpp"
#include "actors/community/room_requests.hpp"
#include "actors/connection/connection.hpp"
#include "protocol/nip42.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using namespace comb::actors;
using storage::membership_change;
using storage::membership_outcome;

namespace {

const auto alice = protocol::key_pair::generate();
const auto bob = protocol::key_pair::generate();
const auto carol = protocol::key_pair::generate();
const membership_context closed_hive{true, "hive.test"};
const membership_context open_hive{false, "hive.test"};

std::string message_of(const protocol::result<storage::membership_command>& r) {
  return r ? "" : r.error().text();
}

/// A connection to hive.test whose members are alice (owner) and bob.
connection connection_to(bool closed_community, const protocol::key_pair* authed) {
  connection_policy policy;
  policy.host = "hive.test";
  policy.closed_community = closed_community;
  policy.members = std::make_shared<member_cache>();
  policy.members->replace({{alice.public_key(), storage::member_role::owner},
                           {bob.public_key(), storage::member_role::member}});
  connection c(policy, "challenge");
  if (authed) {
    auto auth = test::sign_event(*authed, 22242, "",
                                 {{"relay", "wss://hive.test"}, {"challenge", "challenge"}});
    REQUIRE_FALSE(c.authenticate(auth, test::unix_now()));
  }
  return c;
}

std::string admit(connection& c, const protocol::event& ev) {
  auto refused = c.admit_event(ev, test::unix_now(), 1);
  return refused ? refused->text() : "";
}

} // namespace

TEST_CASE("joins and leaves need no - tag, and carry their id as the request id",
          "[unit][actors][nip43]") {
  auto now = test::unix_now();
  auto join = test::sign_event(carol, join_request_kind, "", {{"claim", "abc"}});
  auto command = membership_command_for(join, closed_hive, now);
  REQUIRE(command);
  CHECK(command.value().change == membership_change::claim_invite);
  CHECK(command.value().invite_code == "abc");
  CHECK(command.value().subject == carol.public_key());
  CHECK(command.value().request_id == join.id);

  auto leave = test::sign_event(carol, leave_request_kind, "", {});
  auto left = membership_command_for(leave, closed_hive, now);
  REQUIRE(left);
  CHECK(left.value().change == membership_change::remove_member);
  CHECK(left.value().subject == carol.public_key());
  CHECK(left.value().request_id == leave.id);

  auto protected_join = test::sign_event(carol, join_request_kind, "", {{"-"}, {"claim", "abc"}});
  CHECK(membership_command_for(protected_join, closed_hive, now));

  auto no_claim = test::sign_event(carol, join_request_kind, "", {});
  CHECK(message_of(membership_command_for(no_claim, closed_hive, now))
        == "restricted: a join request needs a claim tag with an invite code");

  // A member the cache knows goes on to the database, which answers duplicate: (Flotilla sends
  // claim "" whenever a member adds the space).
  auto member_context = closed_hive;
  member_context.sender_is_member = true;
  for (auto tags : {std::vector<protocol::tag>{}, std::vector<protocol::tag>{{"claim", ""}}}) {
    auto member_join = test::sign_event(carol, join_request_kind, "", tags);
    auto member_command = membership_command_for(member_join, member_context, now);
    REQUIRE(member_command);
    CHECK(member_command.value().change == membership_change::claim_invite);
    CHECK(member_command.value().invite_code.empty());
  }
}

TEST_CASE("an open community admits a join with no claim or any claim", "[unit][actors][nip43]") {
  auto now = test::unix_now();
  for (auto tags : {std::vector<protocol::tag>{}, std::vector<protocol::tag>{{"claim", "whatever"}}}) {
    auto join = test::sign_event(carol, join_request_kind, "", tags);
    auto command = membership_command_for(join, open_hive, now);
    REQUIRE(command);
    CHECK(command.value().change == membership_change::claim_membership);
    CHECK(command.value().subject == carol.public_key());
  }
}

TEST_CASE("a join claiming a code longer than any the relay mints is refused before it is queued",
          "[unit][actors][nip43]") {
  auto now = test::unix_now();
  const membership_context closed_hive{true, "hive.test"};
  for (const auto& context : {open_hive, closed_hive}) {
    auto longest = test::sign_event(carol, join_request_kind, "", {{"claim", std::string(max_claim_bytes, 'c')}});
    CHECK(membership_command_for(longest, context, now));
    auto longer = test::sign_event(carol, join_request_kind, "", {{"claim", std::string(max_claim_bytes + 1, 'c')}});
    CHECK(message_of(membership_command_for(longer, context, now)) == "restricted: invalid invite code");
  }
}

TEST_CASE("9030-9032 must name this community in a relay tag", "[unit][actors][nip43]") {
  auto now = test::unix_now();
  auto p = protocol::to_hex(carol.public_key());
  auto bare = test::sign_event(alice, add_member_kind, "", {{"p", p}});
  CHECK(message_of(membership_command_for(bare, closed_hive, now))
        == "invalid: a relay tag with this community's URL (ws://hive.test or wss://hive.test) is required");
  auto elsewhere = test::sign_event(alice, remove_member_kind, "", {{"p", p}, {"relay", "wss://other.test"}});
  CHECK(message_of(membership_command_for(elsewhere, closed_hive, now))
        == "invalid: the relay tag names another community");
  auto not_a_url = test::sign_event(alice, change_role_kind, "", {{"p", p}, {"role", "admin"}, {"relay", "hive.test"}});
  CHECK(message_of(membership_command_for(not_a_url, closed_hive, now))
        == "invalid: the relay tag names another community");
  for (const char* url : {"wss://hive.test", "ws://hive.test", "WSS://HIVE.TEST/", "wss://hive.test:443"}) {
    auto named = test::sign_event(alice, add_member_kind, "", {{"p", p}, {"relay", url}});
    auto command = membership_command_for(named, closed_hive, now);
    INFO(url);
    REQUIRE(command);
    CHECK(command.value().change == membership_change::add_member);
    CHECK(command.value().subject == carol.public_key());
    CHECK(command.value().requested_by == alice.public_key());
    CHECK(command.value().request_id == named.id);
  }
}

TEST_CASE("9030-9032 name one member and one role: tags naming two are refused, not applied to the first",
          "[unit][actors][nip43]") {
  auto now = test::unix_now();
  auto p = protocol::to_hex(carol.public_key());
  auto two = test::sign_event(alice, add_member_kind, "",
                              {{"p", p}, {"p", protocol::to_hex(bob.public_key())}, {"relay", "wss://hive.test"}});
  CHECK(message_of(membership_command_for(two, closed_hive, now))
        == "invalid: one user per request: every p tag must name the same hex pubkey");
  auto garbled = test::sign_event(alice, remove_member_kind, "", {{"p", p}, {"p", "carol"}, {"relay", "wss://hive.test"}});
  CHECK(message_of(membership_command_for(garbled, closed_hive, now))
        == "invalid: one user per request: every p tag must name the same hex pubkey");
  auto twice = test::sign_event(alice, add_member_kind, "", {{"p", p}, {"p", p}, {"relay", "wss://hive.test"}});
  auto command = membership_command_for(twice, closed_hive, now);
  REQUIRE(command);
  CHECK(command.value().subject == carol.public_key());

  auto two_roles = test::sign_event(alice, change_role_kind, "",
                                    {{"p", p}, {"role", "member"}, {"role", "admin"}, {"relay", "wss://hive.test"}});
  CHECK(message_of(membership_command_for(two_roles, closed_hive, now))
        == "invalid: one role per request: role tags name different roles");
  auto same_role = test::sign_event(alice, change_role_kind, "",
                                    {{"p", p}, {"role", "admin"}, {"role", "admin"}, {"relay", "wss://hive.test"}});
  auto promoted = membership_command_for(same_role, closed_hive, now);
  REQUIRE(promoted);
  CHECK(promoted.value().role == storage::member_role::admin);
}

TEST_CASE("membership requests outside the request window are refused", "[unit][actors][nip43]") {
  auto now = test::unix_now();
  auto stale = test::sign_event(carol, leave_request_kind, "", {}, now - storage::request_window_seconds - 1);
  CHECK(message_of(membership_command_for(stale, closed_hive, now))
        == "invalid: membership requests must be created within 10 minutes of now");
  // A device clock AUTH accepts (NIP-42's 10 minutes) is accepted for a join too: Flotilla joins
  // each time a space opens and shows a refusal as an access error.
  for (std::int64_t skew : {-8 * 60, 8 * 60}) {
    auto skewed = test::sign_event(carol, join_request_kind, "", {}, now + skew);
    CHECK(membership_command_for(skewed, open_hive, now));
  }
  static_assert(storage::request_window_seconds == protocol::auth_expectation{}.max_skew_seconds);
}

TEST_CASE("a processed request is answered as a duplicate", "[unit][actors][nip43]") {
  for (auto kind : {join_request_kind, leave_request_kind, add_member_kind}) {
    auto reply = reply_for(kind, membership_outcome::already_processed, "wss://hive.test");
    CHECK(reply.accepted);
    CHECK(reply.message == "duplicate: this request was already processed");
  }
  CHECK(reply_for(join_request_kind, membership_outcome::already_member, "wss://hive.test").message
        == "duplicate: you are already a member of this relay.");
  CHECK(reply_for(join_request_kind, membership_outcome::changed, "wss://hive.test").message
        == "info: welcome to wss://hive.test!");
}

TEST_CASE("membership requests come only from their authenticated author, in open communities too",
          "[unit][actors][nip43]") {
  for (bool closed_community : {false, true}) {
    INFO("closed: " << closed_community);
    auto join = test::sign_event(carol, join_request_kind, "", {{"claim", "abc"}});
    auto anonymous = connection_to(closed_community, nullptr);
    CHECK(admit(anonymous, join).starts_with("auth-required: "));
    auto someone_else = connection_to(closed_community, &bob);
    CHECK(admit(someone_else, join) == "restricted: this request may only be sent by its author");
    auto author = connection_to(closed_community, &carol);
    CHECK(admit(author, join) == "");
    auto owner = connection_to(closed_community, &alice);
    auto leave = test::sign_event(bob, leave_request_kind, "", {});
    CHECK(admit(someone_else, leave) == "");
    CHECK(admit(owner, leave) == "restricted: this request may only be sent by its author");
    auto add = test::sign_event(alice, add_member_kind, "",
                                {{"p", protocol::to_hex(carol.public_key())}, {"relay", "wss://hive.test"}});
    CHECK(admit(someone_else, add) == "restricted: this request may only be sent by its author");
    CHECK(admit(owner, add) == "");
  }
}

TEST_CASE("in a closed community a member's connection cannot carry a non-member's event",
          "[unit][actors][nip43]") {
  auto members_note = test::sign_event(bob, 1, "mine");
  auto strangers_note = test::sign_event(carol, 1, "not a member");
  auto member = connection_to(true, &bob);
  CHECK(admit(member, members_note) == "");
  CHECK(admit(member, strangers_note)
        == "restricted: the author of this event is not a member of this community");
  auto stranger = connection_to(true, &carol);
  CHECK(admit(stranger, members_note) == "restricted: you are not a member of this community");
  // An open community stores anyone's events.
  auto open_member = connection_to(false, &bob);
  CHECK(admit(open_member, strangers_note) == "");
}

TEST_CASE("clients may not publish role definitions", "[unit][actors][nip43]") {
  auto owner = connection_to(false, &alice);
  auto role = test::sign_event(alice, 33534, "", {{"-"}, {"d", "owner"}});
  CHECK(admit(owner, role) == "restricted: only the relay may publish kind 33534");
}

TEST_CASE("a room bound reached is refused naming the bound, not as a failure", "[room]") {
  using comb::protocol::room_outcome;
  for (auto outcome : {room_outcome::too_many_rooms, room_outcome::too_many_members,
                       room_outcome::too_many_invites}) {
    auto reply = comb::actors::room_reply_for(9021, outcome);
    CHECK_FALSE(reply.accepted);
    CHECK(reply.message.starts_with("restricted: "));
    CHECK(reply.message.find("the most") != std::string::npos);
  }
  CHECK(comb::actors::room_reply_for(9007, room_outcome::too_many_rooms).message
        == "restricted: this community has the most rooms it may have (1000)");
  CHECK(comb::actors::room_reply_for(9021, room_outcome::too_many_members).message
        == "restricted: this room has the most members it may have (10000)");
}

TEST_CASE("a put of someone already in the room is accepted, a join by a member is not", "[room]") {
  using comb::protocol::room_outcome;
  // Flotilla's member dialog puts several people at once and shows any refusal as an error.
  auto put = comb::actors::room_reply_for(9000, room_outcome::already_member);
  CHECK(put.accepted);
  CHECK(put.message.starts_with("duplicate: "));
  auto join = comb::actors::room_reply_for(9021, room_outcome::already_member);
  CHECK_FALSE(join.accepted);
  CHECK(join.message.starts_with("duplicate: "));
}
