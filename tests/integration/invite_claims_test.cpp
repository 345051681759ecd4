// SPDX-License-Identifier: MIT
// Invite codes chosen over NIP-86 (createclaim, listclaims, deleteclaim) against a real Postgres:
// stored under the rules of minted invites, listed while they admit, ended by revocation.
#include <catch2/catch.hpp>

#include "storage/invite_store.hpp"
#include "storage/membership_rules.hpp"

#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::invite_refusal;
using storage::member_role;
using storage::membership_change;
using outcome = storage::membership_outcome;

namespace {

protocol::bytes32 key(std::uint8_t seed) {
  return author(seed).pubkey();
}

struct claims_fixture : membership_fixture {
  claims_fixture() {
    REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner)).committed);
    REQUIRE(apply(command(membership_change::add_member, admin, member_role::admin)).committed);
    REQUIRE(apply(command(membership_change::add_member, bob)).committed);
  }

  bool create(const protocol::bytes32& who, std::string_view claim, std::int64_t ttl = 3600,
              std::int64_t uses = 1) {
    return members.create_claim(community, who, claim, uses, ttl, now_seconds());
  }

  std::vector<std::string> listed_claims() {
    auto claims = members.open_claims(community, now_seconds());
    REQUIRE(claims);
    return *claims;
  }

  outcome join(const protocol::bytes32& who, const std::string& claim) {
    auto c = command(membership_change::claim_invite, who);
    c.invite_code = claim;
    return apply(c).results[0].outcome;
  }

  protocol::bytes32 owner = key(1), admin = key(2), bob = key(3);
};

} // namespace

TEST_CASE_METHOD(claims_fixture, "a chosen code admits as a minted one does and is listed while it would",
                 "[integration][invites]") {
  CHECK(listed_claims().empty());
  REQUIRE(create(owner, "41970534216794373"));
  CHECK(listed_claims() == std::vector<std::string>{"41970534216794373"});
  // Stored hashed as every code is; the plain text is kept beside it for listclaims.
  CHECK(scalar(connection, "SELECT count(*) FROM invites WHERE code_hash = $1::text AND claim = $2::text",
               {storage::invite_code_hash("41970534216794373"), "41970534216794373"}) == "1");

  CHECK_FALSE(create(admin, "41970534216794373"));
  CHECK(members.last_invite_refusal() == invite_refusal::taken);
  CHECK(members.last_error().empty());
  CHECK_FALSE(create(bob, "bobs-own-code")); // a plain member, and members may not invite here
  CHECK(members.last_invite_refusal() == invite_refusal::not_allowed);
  CHECK_FALSE(create(key(9), "strangers-code"));
  CHECK(members.last_invite_refusal() == invite_refusal::not_allowed);

  REQUIRE(create(admin, "admins-longer-lived", 7200));
  REQUIRE(create(admin, "already-expired", -10));
  CHECK(listed_claims() == std::vector<std::string>{"admins-longer-lived", "41970534216794373"});

  CHECK(join(key(4), "41970534216794373") == outcome::changed);
  CHECK(listed_claims() == std::vector<std::string>{"admins-longer-lived"}); // used up
  CHECK(join(key(5), "41970534216794373") == outcome::invite_exhausted);
  CHECK(join(key(5), "already-expired") == outcome::invite_expired);

  // A demoted admin's codes admit no one, so they are not offered.
  REQUIRE(apply(command(membership_change::update_role, admin, member_role::member)).committed);
  CHECK(listed_claims().empty());
  CHECK(join(key(5), "admins-longer-lived") == outcome::invite_invalid);
}

TEST_CASE_METHOD(claims_fixture, "deleteclaim revokes a code, chosen or minted, and forgets its text",
                 "[integration][invites]") {
  storage::invite_store invites(connection);
  REQUIRE(create(owner, "to-be-deleted", 3600, 0));
  CHECK(invites.revoke_code(community, "to-be-deleted") == storage::revoke_result::revoked);
  CHECK(invites.revoke_code(community, "to-be-deleted") == storage::revoke_result::already_revoked);
  CHECK(invites.revoke_code(community, "never-made") == storage::revoke_result::not_found);
  CHECK(listed_claims().empty());
  CHECK(join(key(6), "to-be-deleted") == outcome::invite_invalid);
  CHECK(scalar(connection, "SELECT count(*) FROM invites WHERE claim IS NOT NULL") == "0");

  auto minted = members.mint_invite(community, owner, 0, 3600, now_seconds());
  REQUIRE(minted);
  CHECK(listed_claims().empty()); // minted codes are kept only hashed: nothing to show
  CHECK(invites.revoke_code(community, minted->code) == storage::revoke_result::revoked);
  CHECK(join(key(6), minted->code) == outcome::invite_invalid);

  // Codes are per community: another may choose the same one.
  auto other = add_community("other.example");
  REQUIRE(paced(members, other, std::vector{command(membership_change::provision_owner, owner, member_role::owner)})
            .committed);
  REQUIRE(members.create_claim(other, owner, "to-be-deleted", 1, 3600, now_seconds()));
}

TEST_CASE_METHOD(claims_fixture, "chosen codes count toward a user's bound on open invites",
                 "[integration][invites]") {
  int made = 0;
  while (made <= storage::max_open_invites_per_user && create(admin, "bulk-code-" + std::to_string(made)))
    ++made;
  CHECK(made == storage::max_open_invites_per_user);
  CHECK(members.last_invite_refusal() == invite_refusal::too_many);
  CHECK_FALSE(members.mint_invite(community, admin, 0, 3600, now_seconds()));
  CHECK(static_cast<std::int64_t>(listed_claims().size()) == storage::max_listed_claims);
  CHECK(create(owner, "owners-own-bound")); // each user has their own
}
