// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "actors/management/management_rules.hpp"

using namespace comb;
using namespace comb::actors;
using protocol::management_method;
using storage::membership_change;
using storage::membership_outcome;

namespace {

protocol::bytes32 key(std::uint8_t byte) {
  protocol::bytes32 out{};
  out.fill(byte);
  return out;
}

protocol::management_request call(management_method method, std::string text = {}) {
  return {method, key(2), std::move(text)};
}

} // namespace

TEST_CASE("only NIP-86's content type is a management call", "[actors][management]") {
  CHECK(is_management_content_type("application/nostr+json+rpc"));
  CHECK(is_management_content_type("Application/Nostr+JSON+RPC; charset=utf-8"));
  CHECK_FALSE(is_management_content_type("application/json"));
  CHECK_FALSE(is_management_content_type(""));
  CHECK_FALSE(is_management_content_type("application/nostr+json+rpcx"));
}

TEST_CASE("member and ban methods become membership commands signed off by the caller",
          "[actors][management]") {
  auto ban = membership_command_for(call(management_method::ban_pubkey, "spam"), key(1));
  REQUIRE(ban);
  CHECK(ban->change == membership_change::ban_pubkey);
  CHECK(ban->subject == key(2));
  CHECK(ban->requested_by == key(1));
  CHECK(ban->reason == "spam");
  CHECK(membership_command_for(call(management_method::allow_pubkey), key(1))->change
        == membership_change::add_member);
  CHECK(membership_command_for(call(management_method::allow_pubkey), key(1))->role
        == storage::member_role::member);
  CHECK(membership_command_for(call(management_method::unallow_pubkey), key(1))->change
        == membership_change::remove_member);
  CHECK(membership_command_for(call(management_method::unban_pubkey), key(1))->change
        == membership_change::unban_pubkey);
  CHECK_FALSE(membership_command_for(call(management_method::ban_event), key(1)));
  CHECK_FALSE(membership_command_for({management_method::list_banned_pubkeys, {}, {}}, key(1)));
}

TEST_CASE("an allowpubkey lifts a ban first, as Flotilla restores a banned member",
          "[actors][management]") {
  auto allow = membership_command_for(call(management_method::allow_pubkey), key(1));
  REQUIRE(allow);
  CHECK(allow->change == membership_change::add_member);
  CHECK(allow->lifts_ban);
  for (auto other : {management_method::ban_pubkey, management_method::unban_pubkey,
                     management_method::unallow_pubkey}) {
    auto command = membership_command_for(call(other), key(1));
    REQUIRE(command);
    CHECK_FALSE(command->lifts_ban);
  }
}

TEST_CASE("membership outcomes become NIP-86 answers", "[actors][management]") {
  for (auto done : {membership_outcome::changed, membership_outcome::nothing_to_do,
                    membership_outcome::already_member, membership_outcome::not_member}) {
    auto reply = management_reply_for(done);
    CHECK(reply.status == 200);
    CHECK(reply.body == R"({"result":true})");
  }
  auto owner = management_reply_for(membership_outcome::is_owner);
  CHECK(owner.status == 403);
  CHECK(owner.outcome == management_outcome::forbidden);
  CHECK(boost::json::parse(owner.body).at("error").as_string().starts_with("the owner"));
  CHECK(management_reply_for(membership_outcome::not_allowed).status == 403);
  auto banned = management_reply_for(membership_outcome::banned);
  CHECK(banned.status == 200);
  CHECK(banned.outcome == management_outcome::error);
  CHECK(management_reply_for(membership_outcome::failed).status == 503);
}
