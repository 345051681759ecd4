// SPDX-License-Identifier: MIT
// Invite codes chosen over NIP-86 (createclaim, listclaims, deleteclaim) against a real Postgres:
// stored under the rules of minted invites, listed while they admit, ended by deletion.
#include <catch2/catch.hpp>

#include "protocol/claim_seal.hpp"
#include "storage/invite_store.hpp"
#include "storage/pg_array.hpp"
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

  storage::invite_code_hashes hashes(std::string_view claim, std::int64_t in = 0) {
    return storage::invite_hashes(relay_key, in == 0 ? community : in, claim);
  }

  protocol::bytes32 owner = key(1), admin = key(2), bob = key(3);
};

} // namespace

TEST_CASE_METHOD(claims_fixture, "a chosen code admits as a minted one does and is listed while it would",
                 "[integration][invites]") {
  CHECK(listed_claims().empty());
  REQUIRE(create(owner, "41970534216794373"));
  CHECK(listed_claims() == std::vector<std::string>{"41970534216794373"});
  // Stored under a hash keyed by the relay key, so the database alone gives no way to test
  // guesses at a short code; beside it, sealed with the relay key for listclaims.
  CHECK(scalar(connection, "SELECT count(*) FROM invites WHERE code_hash = $1::text",
               {storage::invite_code_hash("41970534216794373")}) == "0");
  auto sealed = scalar(connection, "SELECT claim FROM invites WHERE code_hash = $1::text",
                       {hashes("41970534216794373").chosen});
  CHECK(sealed.find("41970534216794373") == std::string::npos);
  CHECK(protocol::open_claim(relay_key, community, sealed) == "41970534216794373");
  // One sealed under another key and stored under the plain hash (made before codes were keyed,
  // then the relay key changed) still admits, unshown.
  auto foreign = protocol::key_pair::generate();
  REQUIRE(scalar(connection, "INSERT INTO invites (community_id, code_hash, expires_at, created_by, claim)"
                             " VALUES ($1::bigint, $2::text, $3::bigint, $4::bytea, $5::text) RETURNING 1",
                 {std::to_string(community), storage::invite_code_hash("from-elsewhere-1"),
                  std::to_string(now_seconds() + 3600), storage::bytea_param(owner),
                  protocol::seal_claim(foreign, community, "from-elsewhere-1")}) == "1");
  CHECK(listed_claims() == std::vector<std::string>{"41970534216794373"});
  CHECK(join(key(7), "from-elsewhere-1") == outcome::changed);

  CHECK_FALSE(create(admin, "41970534216794373"));
  CHECK(members.last_invite_refusal() == invite_refusal::taken);
  CHECK(members.last_error().empty());
  CHECK(create(owner, "41970534216794373")); // the owner's own call, retried
  CHECK(listed_claims().size() == 1);
  CHECK_FALSE(create(bob, "bobs-own-code")); // a plain member, and members may not invite here
  CHECK(members.last_invite_refusal() == invite_refusal::not_allowed);
  CHECK_FALSE(create(key(9), "strangers-code"));
  CHECK(members.last_invite_refusal() == invite_refusal::not_allowed);

  REQUIRE(create(admin, "admins-longer-lived", 7200));
  REQUIRE(create(admin, "already-expired", -10));
  CHECK(listed_claims() == std::vector<std::string>{"admins-longer-lived", "41970534216794373"});

  CHECK(join(key(4), "41970534216794373") == outcome::changed);
  CHECK(listed_claims() == std::vector<std::string>{"admins-longer-lived"}); // used up
  CHECK_FALSE(create(owner, "41970534216794373")); // no longer open: not the caller's retry
  CHECK(members.last_invite_refusal() == invite_refusal::taken);
  auto minted = members.mint_invite(community, owner, 1, 3600, now_seconds());
  REQUIRE(minted);
  CHECK_FALSE(create(owner, minted->code)); // the caller's, but minted: never shown, not a retry
  CHECK(members.last_invite_refusal() == invite_refusal::taken);
  CHECK(join(key(5), "41970534216794373") == outcome::invite_exhausted);
  CHECK(join(key(5), "already-expired") == outcome::invite_expired);

  // A demoted admin's codes admit no one, so they are not offered.
  REQUIRE(apply(command(membership_change::update_role, admin, member_role::member)).committed);
  CHECK(listed_claims().empty());
  CHECK_FALSE(create(admin, "admins-longer-lived")); // nor a retry by one who may no longer invite
  // A sealed code copied onto another open row by hand is not shown for that row too.
  REQUIRE(create(owner, "owners-fresh-code-1"));
  REQUIRE(scalar(connection, "UPDATE invites SET claim = (SELECT claim FROM invites WHERE code_hash = $1::text)"
                             " WHERE code_hash = $2::text RETURNING 1",
                 {hashes("owners-fresh-code-1").chosen, storage::invite_code_hash("from-elsewhere-1")})
          == "1");
  CHECK(listed_claims() == std::vector<std::string>{"owners-fresh-code-1"});
  CHECK(join(key(5), "admins-longer-lived") == outcome::invite_invalid);
}

TEST_CASE_METHOD(claims_fixture, "deleteclaim deletes a code, chosen or minted, as the caller's role allows",
                 "[integration][invites]") {
  storage::invite_store invites(connection);
  using storage::code_deletion;
  REQUIRE(create(admin, "admins-own-code", 3600, 0));
  REQUIRE(create(owner, "owners-own-code", 3600, 0));
  auto operators = members.mint_invite(community, std::nullopt, 0, 3600, now_seconds());
  REQUIRE(operators);
  // An admin ends their own codes, not the owner's nor the operator's; a member none.
  CHECK(invites.delete_code(community, "owners-own-code", relay_key, admin) == code_deletion::not_allowed);
  CHECK(invites.delete_code(community, operators->code, relay_key, admin) == code_deletion::not_allowed);
  CHECK(invites.delete_code(community, "admins-own-code", relay_key, bob) == code_deletion::not_manager);
  CHECK(invites.delete_code(community, "admins-own-code", relay_key, admin) == code_deletion::deleted);
  CHECK(invites.delete_code(community, "admins-own-code", relay_key, admin) == code_deletion::not_found);
  CHECK(invites.delete_code(community, "never-made-at-all", relay_key, owner) == code_deletion::not_found);
  CHECK(join(key(6), "admins-own-code") == outcome::invite_invalid);
  // Nothing stays behind: a loop of create and delete leaves no rows.
  CHECK(scalar(connection, "SELECT count(*) FROM invites WHERE code_hash IN ($1::text, $2::text)",
               {hashes("admins-own-code").chosen, hashes("admins-own-code").minted}) == "0");
  CHECK(listed_claims() == std::vector<std::string>{"owners-own-code"});

  // The owner ends any: the operator's minted code too, which listclaims never showed.
  CHECK(invites.delete_code(community, operators->code, relay_key, owner) == code_deletion::deleted);
  CHECK(join(key(6), operators->code) == outcome::invite_invalid);

  // Codes are per community: another may hold the same one, and neither sees or ends the other's.
  auto other = add_community("other.example");
  REQUIRE(paced(members, other, std::vector{command(membership_change::provision_owner, admin, member_role::owner)})
            .committed);
  REQUIRE(members.create_claim(other, admin, "owners-own-code", 1, 3600, now_seconds()));
  REQUIRE(members.create_claim(other, admin, "only-in-the-other", 1, 3600, now_seconds()));
  CHECK(listed_claims() == std::vector<std::string>{"owners-own-code"});
  CHECK(invites.delete_code(community, "only-in-the-other", relay_key, owner) == code_deletion::not_found);
  CHECK(invites.delete_code(other, "owners-own-code", relay_key, admin) == code_deletion::deleted);
  CHECK(listed_claims() == std::vector<std::string>{"owners-own-code"});
}

TEST_CASE_METHOD(claims_fixture, "chosen codes count toward a user's bound on open invites; listclaims shows 100",
                 "[integration][invites]") {
  int made = 0;
  while (made <= storage::max_open_invites_per_user && create(admin, "bulk-admin-code-" + std::to_string(made)))
    ++made;
  CHECK(made == storage::max_open_invites_per_user);
  CHECK(members.last_invite_refusal() == invite_refusal::too_many);
  CHECK_FALSE(members.mint_invite(community, admin, 0, 3600, now_seconds()));
  for (int i = 0; i < 10; ++i)
    REQUIRE(create(owner, "bulk-owner-code-" + std::to_string(i))); // each user has their own bound
  CHECK(static_cast<std::int64_t>(listed_claims().size()) == storage::max_listed_claims);
}

TEST_CASE_METHOD(claims_fixture, "codes that do not open under the relay key take no place in listclaims",
                 "[integration][invites]") {
  REQUIRE(create(owner, "opens-under-our-key", 3600));
  // More than a page of rows sealed under another key (a relay key changed by hand), each
  // living longer than the code that opens, so that each page of the listing starts with them.
  const auto elsewhere = protocol::seal_claim(protocol::key_pair::generate(), community, "sealed-elsewhere");
  REQUIRE(scalar(connection, "INSERT INTO invites (community_id, code_hash, max_uses, expires_at, created_by, claim)"
                             " SELECT $1::bigint, 'elsewhere-' || n, 0, $2::bigint + n, $3::bytea, $4::text"
                             " FROM generate_series(1, $5::int) AS n RETURNING 1",
                 {std::to_string(community), std::to_string(now_seconds() + 7200), storage::bytea_param(owner),
                  elsewhere, std::to_string(storage::max_listed_claims + 50)}) == "1");
  CHECK(listed_claims() == std::vector<std::string>{"opens-under-our-key"});
}

TEST_CASE_METHOD(claims_fixture, "a chosen code stored under the plain hash, as before the keyed one, still works",
                 "[integration][invites]") {
  // As createclaim stored it before codes were keyed by the relay key.
  REQUIRE(scalar(connection, "INSERT INTO invites (community_id, code_hash, max_uses, expires_at, created_by, claim)"
                             " VALUES ($1::bigint, $2::text, 2, $3::bigint, $4::bytea, $5::text) RETURNING 1",
                 {std::to_string(community), storage::invite_code_hash("stored-plainly-1"),
                  std::to_string(now_seconds() + 3600), storage::bytea_param(admin),
                  protocol::seal_claim(relay_key, community, "stored-plainly-1")}) == "1");
  CHECK(listed_claims() == std::vector<std::string>{"stored-plainly-1"});
  CHECK_FALSE(create(owner, "stored-plainly-1")); // not a second row under the other key
  CHECK(members.last_invite_refusal() == invite_refusal::taken);
  CHECK(create(admin, "stored-plainly-1")); // its creator's retry
  CHECK(scalar(connection, "SELECT count(*) FROM invites WHERE community_id = $1::bigint",
               {std::to_string(community)}) == "1");
  CHECK(join(key(4), " stored-plainly-1\n") == outcome::changed); // pasted with blanks around
  CHECK(scalar(connection, "SELECT use_count FROM invites WHERE code_hash = $1::text",
               {storage::invite_code_hash("stored-plainly-1")}) == "1");
  storage::invite_store invites(connection);
  CHECK(invites.delete_code(community, "stored-plainly-1", relay_key, owner) == storage::code_deletion::deleted);
  CHECK(join(key(5), "stored-plainly-1") == outcome::invite_invalid);

  // At start the relay moves such codes to the keyed hash; one sealed under another key stays.
  REQUIRE(scalar(connection, "INSERT INTO invites (community_id, code_hash, max_uses, expires_at, created_by, claim)"
                             " VALUES ($1::bigint, $2::text, 2, $3::bigint, $4::bytea, $5::text),"
                             "        ($1::bigint, $6::text, 2, $3::bigint, $4::bytea, $7::text) RETURNING 1",
                 {std::to_string(community), storage::invite_code_hash("stored-plainly-2"),
                  std::to_string(now_seconds() + 3600), storage::bytea_param(admin),
                  protocol::seal_claim(relay_key, community, "stored-plainly-2"),
                  storage::invite_code_hash("sealed-elsewhere-2"),
                  protocol::seal_claim(protocol::key_pair::generate(), community, "sealed-elsewhere-2")})
          == "1");
  CHECK(members.key_plain_claims() == 1);
  CHECK(members.key_plain_claims() == 0);
  CHECK(scalar(connection, "SELECT count(*) FROM invites WHERE code_hash IN ($1::text, $2::text)",
               {hashes("stored-plainly-2").chosen, storage::invite_code_hash("sealed-elsewhere-2")}) == "2");
  CHECK(listed_claims() == std::vector<std::string>{"stored-plainly-2"});
  CHECK(join(key(8), "stored-plainly-2") == outcome::changed);
  CHECK(join(key(9), "sealed-elsewhere-2") == outcome::changed);

  // A keyed code, pasted with blanks around, is found and its own row used.
  REQUIRE(create(owner, "stored-keyed-1"));
  CHECK(join(key(6), "\tstored-keyed-1 ") == outcome::changed);
  CHECK(scalar(connection, "SELECT use_count FROM invites WHERE code_hash = $1::text",
               {hashes("stored-keyed-1").chosen}) == "1");
  CHECK(join(key(7), "stored-keyed-1") == outcome::invite_exhausted);
}

TEST_CASE_METHOD(claims_fixture, "a code stored under both hashes is deleted whole or not at all",
                 "[integration][invites]") {
  // The admin's keyed row, and the owner's plain one as a pod before keyed codes would add it.
  REQUIRE(create(admin, "under-both-keys-1", 3600, 5));
  REQUIRE(scalar(connection, "INSERT INTO invites (community_id, code_hash, max_uses, expires_at, created_by, claim)"
                             " VALUES ($1::bigint, $2::text, 5, $3::bigint, $4::bytea, $5::text) RETURNING 1",
                 {std::to_string(community), storage::invite_code_hash("under-both-keys-1"),
                  std::to_string(now_seconds() + 3600), storage::bytea_param(owner),
                  protocol::seal_claim(relay_key, community, "under-both-keys-1")}) == "1");
  auto rows = [&] {
    return scalar(connection, "SELECT count(*) FROM invites WHERE code_hash IN ($1::text, $2::text)",
                  {hashes("under-both-keys-1").chosen, hashes("under-both-keys-1").minted});
  };
  storage::invite_store invites(connection);
  CHECK(invites.delete_code(community, "under-both-keys-1", relay_key, admin) == storage::code_deletion::not_allowed);
  CHECK(rows() == "2");
  CHECK(join(key(4), "under-both-keys-1") == outcome::changed);
  CHECK(invites.delete_code(community, "under-both-keys-1", relay_key, owner) == storage::code_deletion::deleted);
  CHECK(rows() == "0");
  CHECK(join(key(5), "under-both-keys-1") == outcome::invite_invalid);
}

TEST_CASE_METHOD(claims_fixture, "no user makes a code in an archived community; the operator still may",
                 "[integration][invites]") {
  REQUIRE(create(owner, "before-the-archive"));
  REQUIRE(scalar(connection, "UPDATE communities SET archived_at = now() WHERE id = $1::bigint RETURNING 1",
                 {std::to_string(community)}) == "1");
  CHECK_FALSE(create(owner, "after-the-archive"));
  CHECK(members.last_invite_refusal() == invite_refusal::archived);
  CHECK(members.last_error().empty());
  CHECK_FALSE(members.mint_invite(community, admin, 1, 3600, now_seconds())); // a 28935 too
  CHECK(members.last_invite_refusal() == invite_refusal::archived);
  CHECK_FALSE(create(bob, "members-code-archived")); // the archive is the one reason any user hears
  CHECK(members.last_invite_refusal() == invite_refusal::archived);
  CHECK(members.mint_invite(community, std::nullopt, 1, 3600, now_seconds())); // for after the archive
  storage::invite_store invites(connection);
  CHECK(invites.delete_code(community, "before-the-archive", relay_key, owner) == storage::code_deletion::deleted);
}

TEST_CASE_METHOD(claims_fixture, "a code deleted between createclaim's insert and its reason is stored on the retry",
                 "[integration][invites]") {
  REQUIRE(create(owner, "contended-code-1"));
  // The owner's deleteclaim lands right after the admin's insert found the code taken: a trigger
  // on that very statement deletes the owner's row, so the reason's statement finds none.
  const auto owners = hashes("contended-code-1").chosen;
  REQUIRE(connection.exec("CREATE FUNCTION delete_owners_code() RETURNS trigger LANGUAGE plpgsql AS $$"
                          " BEGIN DELETE FROM invites WHERE code_hash = '" + owners + "' AND created_by = '\\x"
                            + protocol::to_hex(owner) + "'::bytea; RETURN NULL; END $$")
            .ok());
  REQUIRE(connection.exec("CREATE TRIGGER owners_code_deleted AFTER INSERT ON invites"
                          " FOR EACH STATEMENT EXECUTE FUNCTION delete_owners_code()")
            .ok());
  CHECK(create(admin, "contended-code-1"));
  CHECK(members.last_invite_refusal() == invite_refusal::none);
  CHECK(scalar(connection, "SELECT encode(created_by, 'hex') FROM invites WHERE code_hash = $1::text", {owners})
        == protocol::to_hex(admin));
  REQUIRE(connection.exec("DROP TRIGGER owners_code_deleted ON invites").ok());
}
