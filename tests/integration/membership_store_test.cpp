// SPDX-License-Identifier: MIT
// Every NIP-43 write path against a real Postgres: the returned list is the single live 13534
// and names exactly the committed members; a no-op writes nothing.
#include <catch2/catch.hpp>

#include "storage/member_list.hpp"
#include "storage/pg_connection.hpp"
#include <cstring>

#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::member_role;
using storage::membership_change;
using outcome = storage::membership_outcome;

namespace {

void require_list_is_live(membership_fixture& f, const storage::membership_write& w,
                          std::int64_t community) {
  REQUIRE(w.committed);
  REQUIRE(w.list);
  auto lists = f.live_lists(community);
  REQUIRE(lists.size() == 1);
  CHECK(lists[0] == *w.list);
  CHECK(listed(*w.list) == f.stored_members(community));
  CHECK(f.members.verify(community).matches);
}

void require_nothing_written(membership_fixture& f, const storage::membership_write& w,
                             const protocol::event& previous) {
  REQUIRE(w.committed);
  CHECK_FALSE(w.list);
  auto lists = f.live_lists(f.community);
  REQUIRE(lists.size() == 1);
  CHECK(lists[0] == previous);
}

bool list_matches_members(membership_fixture& f, std::int64_t community) {
  return f.members.verify(community).matches;
}


} // namespace

TEST_CASE_METHOD(membership_fixture, "every membership write path commits its own list",
                 "[integration][membership]") {
  auto owner = key(1), bob = key(2), carol = key(3), dave = key(4), erin = key(5);

  auto boot = apply(command(membership_change::provision_owner, owner, member_role::owner));
  CHECK(boot.results[0].outcome == outcome::changed);
  require_list_is_live(*this, boot, community);
  require_nothing_written(*this, apply(command(membership_change::provision_owner, owner)), *boot.list);

  auto added = apply(command(membership_change::add_member, bob));
  require_list_is_live(*this, added, community);
  REQUIRE(added.results[0].delta);
  CHECK(added.results[0].delta->kind == 8000u);
  CHECK(*protocol::first_tag_value(*added.results[0].delta, "p") == protocol::to_hex(bob));
  auto again = apply(command(membership_change::add_member, bob));
  CHECK(again.results[0].outcome == outcome::already_member);
  require_nothing_written(*this, again, *added.list);

  auto claimed = apply(command(membership_change::claim_membership, carol));
  require_list_is_live(*this, claimed, community);

  auto invite = members.mint_invite(community, std::nullopt, 1, 3600, now_seconds());
  REQUIRE(invite);
  auto join = command(membership_change::claim_invite, dave);
  join.invite_code = invite->code;
  auto joined = apply(join);
  CHECK(joined.results[0].outcome == outcome::changed);
  require_list_is_live(*this, joined, community);
  auto second = join;
  second.subject = erin;
  auto exhausted = apply(second);
  CHECK(exhausted.results[0].outcome == outcome::invite_exhausted);
  require_nothing_written(*this, exhausted, *joined.list);
  auto retry = apply(join); // a member retrying the code does not use it up
  CHECK(retry.results[0].outcome == outcome::already_member);
  second.invite_code = "not-a-code";
  CHECK(apply(second).results[0].outcome == outcome::invite_invalid);
  auto stale = members.mint_invite(community, std::nullopt, 5, -10, now_seconds());
  second.invite_code = stale->code;
  CHECK(apply(second).results[0].outcome == outcome::invite_expired);

  auto removed = apply(command(membership_change::remove_member, bob));
  require_list_is_live(*this, removed, community);
  CHECK(removed.results[0].delta->kind == 8001u);
  CHECK(apply(command(membership_change::remove_member, bob)).results[0].outcome == outcome::not_member);
  auto owner_stays = apply(command(membership_change::remove_member, owner));
  CHECK(owner_stays.results[0].outcome == outcome::is_owner);
  require_nothing_written(*this, owner_stays, *removed.list);

  auto if_role = command(membership_change::remove_member_if_role, carol);
  if_role.expected_role = member_role::admin;
  auto mismatch = apply(if_role);
  CHECK(mismatch.results[0].outcome == outcome::role_mismatch);
  require_nothing_written(*this, mismatch, *removed.list);
  if_role.expected_role = member_role::member;
  require_list_is_live(*this, apply(if_role), community);

  auto promoted = apply(command(membership_change::update_role, dave, member_role::admin));
  require_list_is_live(*this, promoted, community);
  CHECK(apply(command(membership_change::update_role, dave, member_role::admin)).results[0].outcome
        == outcome::nothing_to_do);
  CHECK(apply(command(membership_change::update_role, owner, member_role::member)).results[0].outcome
        == outcome::is_owner);

  auto transferred = apply(command(membership_change::transfer_owner, dave, member_role::owner));
  require_list_is_live(*this, transferred, community);
  CHECK(stored_members(community)
        == std::set<std::pair<std::string, std::string>>{{protocol::to_hex(owner), "member"},
                                                          {protocol::to_hex(dave), "owner"}});

  auto repaired = apply(command(membership_change::republish, owner));
  require_list_is_live(*this, repaired, community);
  CHECK(repaired.list->created_at > transferred.list->created_at);
}

TEST_CASE_METHOD(membership_fixture, "backfill and create-with-owner write their lists",
                 "[integration][membership]") {
  auto other = add_community("b.example");
  scalar(connection, "INSERT INTO allowlist (community_id, pubkey) VALUES ($1::bigint, $2::bytea),"
                     " ($1::bigint, $3::bytea)",
         {std::to_string(other), "\\x" + protocol::to_hex(key(7)), "\\x" + protocol::to_hex(key(8))});
  auto backfill = command(membership_change::backfill_allowlist, key(7));
  auto filled = paced(members, other, std::span(&backfill, 1));
  require_list_is_live(*this, filled, other);
  CHECK(filled.members.size() == 2);
  auto refill = paced(members, other, std::span(&backfill, 1));
  CHECK(refill.results[0].outcome == outcome::nothing_to_do);
  CHECK_FALSE(refill.list);

  auto created = members.create_community_with_owner("c.example", key(9), true, now_seconds());
  REQUIRE(created.result == storage::community_creation::status::created);
  require_list_is_live(*this, created.write, created.community->id);
  auto exists = members.create_community_with_owner("c.example", key(10), false, now_seconds());
  CHECK(exists.result == storage::community_creation::status::host_exists);
  CHECK(live_lists(created.community->id).size() == 1);
  CHECK(stored_members(created.community->id).size() == 1);
}

TEST_CASE_METHOD(membership_fixture, "a change in a second that has a list waits for the next",
                 "[integration][membership]") {
  // Lists keep pace with the clock: never a created_at ahead of now, so a second that already
  // has a list sends the change to the next second, with nothing written meanwhile.
  auto bob = key(2), carol = key(3);
  std::int64_t frozen = now_seconds();
  auto add = command(membership_change::add_member, bob);
  auto add_carol = command(membership_change::add_member, carol);
  auto first = members.apply(community, std::span(&add, 1), frozen);
  require_list_is_live(*this, first, community);
  CHECK(first.list->created_at == frozen);

  auto waiting = members.apply(community, std::span(&add_carol, 1), frozen);
  CHECK_FALSE(waiting.committed);
  CHECK(waiting.retry_at == frozen + 1);
  CHECK_FALSE(waiting.list);
  CHECK(stored_members(community).size() == 1);
  CHECK(live_lists(community) == std::vector<protocol::event>{*first.list});

  // A command that changes nothing writes no list, so it need not wait.
  auto duplicate = members.apply(community, std::span(&add, 1), frozen);
  CHECK(duplicate.committed);
  CHECK(duplicate.results[0].outcome == outcome::already_member);

  auto next = members.apply(community, std::span(&add_carol, 1), waiting.retry_at);
  require_list_is_live(*this, next, community);
  CHECK(next.list->created_at == frozen + 1);
  CHECK(next.list->id != first.list->id);
}

TEST_CASE_METHOD(membership_fixture,
                 "a change that takes access away goes one second ahead rather than wait, never two",
                 "[integration][membership]") {
  // Two pods, the second's clock a little behind: the first, kept busy with joins, writes each
  // second's list as that second begins by its clock. A ban or removal sent to the second pod
  // finds its second taken every time; waiting for the next, it would wait as long as the
  // first pod stays busy, and the banned member would keep their access.
  auto bob = key(2), carol = key(3), dave = key(4);
  std::int64_t frozen = now_seconds();
  for (auto who : {bob, carol}) {
    auto add = command(membership_change::add_member, who);
    REQUIRE(members.apply(community, std::span(&add, 1), frozen - 1 + (who == carol)).committed);
  }
  auto ban = command(membership_change::ban_pubkey, bob);
  auto banned = members.apply(community, std::span(&ban, 1), frozen);
  require_list_is_live(*this, banned, community);
  CHECK(banned.list->created_at == frozen + 1);
  CHECK(stored_members(community).size() == 1);
  // The second after is taken now: a join waits for the one after it, a removal for it.
  auto add_dave = command(membership_change::add_member, dave);
  CHECK(members.apply(community, std::span(&add_dave, 1), frozen).retry_at == frozen + 2);
  auto remove = command(membership_change::remove_member, carol);
  auto waiting = members.apply(community, std::span(&remove, 1), frozen);
  CHECK_FALSE(waiting.committed);
  CHECK(waiting.retry_at == frozen + 1);
  CHECK(stored_members(community).size() == 1);
  auto removed = members.apply(community, std::span(&remove, 1), waiting.retry_at);
  require_list_is_live(*this, removed, community);
  CHECK(removed.list->created_at == frozen + 2);
  CHECK(stored_members(community).empty());
}

TEST_CASE_METHOD(membership_fixture, "a batch applies commands in order with one list",
                 "[integration][membership]") {
  std::vector<storage::membership_command> batch{command(membership_change::add_member, key(2)),
                                                 command(membership_change::add_member, key(2)),
                                                 command(membership_change::add_member, key(3)),
                                                 command(membership_change::remove_member, key(2))};
  auto w = paced(members, community, batch);
  require_list_is_live(*this, w, community);
  REQUIRE(w.results.size() == 4);
  CHECK(w.results[0].outcome == outcome::changed);
  CHECK(w.results[1].outcome == outcome::already_member);
  CHECK(w.results[2].outcome == outcome::changed);
  CHECK(w.results[3].outcome == outcome::changed);
  CHECK(stored_members(community)
        == std::set<std::pair<std::string, std::string>>{{protocol::to_hex(key(3)), "member"}});
}

TEST_CASE_METHOD(membership_fixture, "a batch that signs one delta twice indexes it once",
                 "[integration][membership]") {
  // Added, removed and added again in one second: the two 8000s are one event, and a REQ by
  // #p must return it once.
  std::vector<storage::membership_command> batch{command(membership_change::add_member, key(5)),
                                                 command(membership_change::remove_member, key(5)),
                                                 command(membership_change::add_member, key(5))};
  auto w = paced(members, community, batch);
  require_list_is_live(*this, w, community);
  REQUIRE(w.results.size() == 3);
  REQUIRE(w.results[0].delta);
  REQUIRE(w.results[2].delta);
  REQUIRE(w.results[0].delta->id == w.results[2].delta->id);
  CHECK(scalar(connection, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint AND kind = 8000"
                           " AND name = 'p' AND value = $2",
               {std::to_string(community), protocol::to_hex(key(5))})
        == "1");
}

TEST_CASE_METHOD(membership_fixture, "each member a batch adds is recorded as added by the command that added them",
                 "[integration][membership]") {
  auto ban = command(membership_change::ban_pubkey, key(4));
  ban.added_by = "nip86:" + protocol::to_hex(key(9));
  auto join = command(membership_change::claim_membership, key(2));
  join.requested_by = key(2);
  join.added_by = "join";
  auto add = command(membership_change::add_member, key(3));
  add.added_by = "operator";
  auto joins_too = command(membership_change::claim_membership, key(3)); // finds them in already
  joins_too.requested_by = key(3);
  joins_too.added_by = "join";
  std::vector<storage::membership_command> batch{ban, join, add, joins_too};
  auto w = paced(members, community, batch);
  require_list_is_live(*this, w, community);
  auto added_by = [&](std::uint8_t who) {
    return scalar(connection, "SELECT added_by FROM members WHERE community_id = $1::bigint AND pubkey = decode($2, 'hex')",
                  {std::to_string(community), protocol::to_hex(key(who))});
  };
  CHECK(added_by(2) == "join"); // not the admin whose ban shared the batch
  CHECK(added_by(3) == "operator");
}

TEST_CASE_METHOD(membership_fixture, "communities keep separate members and lists",
                 "[integration][membership]") {
  auto other = add_community("b.example");
  auto a = apply(command(membership_change::add_member, key(2)));
  auto c = command(membership_change::add_member, key(3));
  auto b = paced(members, other, std::span(&c, 1));
  require_list_is_live(*this, a, community);
  require_list_is_live(*this, b, other);
  CHECK(listed(*a.list) == std::set<std::pair<std::string, std::string>>{{protocol::to_hex(key(2)), "member"}});
  CHECK(listed(*b.list) == std::set<std::pair<std::string, std::string>>{{protocol::to_hex(key(3)), "member"}});
}

TEST_CASE_METHOD(membership_fixture, "a store's remembered members follow other writers",
                 "[integration][membership]") {
  // The store keeps the members of its last write; another pod's write, or rows changed by
  // hand, must make it read them again rather than write a list that forgets someone.
  REQUIRE(apply(command(membership_change::add_member, key(2))).committed);
  storage::pg_connection other_connection(database.conninfo());
  storage::membership_store other(other_connection, relay_key);
  auto c = command(membership_change::add_member, key(3));
  REQUIRE(paced(other, community, std::span(&c, 1)).committed);
  auto after_other = apply(command(membership_change::add_member, key(4)));
  require_list_is_live(*this, after_other, community);
  CHECK(listed(*after_other.list).size() == 3);

  (void)scalar(connection, "INSERT INTO members (community_id, pubkey, role) VALUES ($1::bigint,"
                           " decode($2, 'hex'), 'member')",
               {std::to_string(community), protocol::to_hex(key(5))});
  auto after_hand = apply(command(membership_change::add_member, key(6)));
  require_list_is_live(*this, after_hand, community);
  CHECK(listed(*after_hand.list).size() == 5);

  // A role changed by hand keeps the member count: only the state version (bumped by the
  // members table's trigger) tells the store its remembered members are stale.
  (void)scalar(connection, "UPDATE members SET role = 'admin' WHERE community_id = $1::bigint"
                           " AND pubkey = decode($2, 'hex')",
               {std::to_string(community), protocol::to_hex(key(5))});
  auto after_role = apply(command(membership_change::add_member, key(7)));
  require_list_is_live(*this, after_role, community);
  CHECK(listed(*after_role.list).contains({protocol::to_hex(key(5)), "admin"}));
}

TEST_CASE_METHOD(membership_fixture, "a store's remembered members do not outlive a database that went back",
                 "[integration][membership]") {
  // A failover to a standby that missed this store's last write, and another pod's write there
  // that reached the same state version: the version alone would pass the remembered members
  // (with someone the database never added) into the next list.
  auto first = apply(command(membership_change::add_member, key(2)));
  REQUIRE(first.committed);
  auto remembered = apply(command(membership_change::add_member, key(3)));
  REQUIRE(remembered.committed);
  const std::string id = std::to_string(community);
  REQUIRE(connection.exec("BEGIN").ok());
  REQUIRE(connection.exec("SET LOCAL session_replication_role = replica").ok()); // no version triggers
  (void)scalar(connection, "DELETE FROM members WHERE community_id = $1::bigint AND pubkey = decode($2, 'hex')"
                           " RETURNING 1", {id, protocol::to_hex(key(3))});
  (void)scalar(connection, "DELETE FROM events WHERE community_id = $1::bigint AND kind = 13534 RETURNING 1", {id});
  (void)scalar(connection, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
                           " VALUES ($1::bigint, decode($2, 'hex'), decode($3, 'hex'), $4::bigint, 13534, '{}')"
                           " RETURNING 1",
               {id, protocol::to_hex(first.list->id), protocol::to_hex(signer(community).public_key()),
                std::to_string(first.list->created_at)});
  REQUIRE(scalar(connection, "SELECT state_version FROM communities WHERE id = $1::bigint", {id})
          == std::to_string(remembered.state_version));
  REQUIRE(connection.exec("COMMIT").ok());

  auto next = apply(command(membership_change::add_member, key(4)));
  REQUIRE(next.committed);
  REQUIRE(next.list);
  CHECK_FALSE(listed(*next.list).contains({protocol::to_hex(key(3)), "member"}));
  CHECK(listed(*next.list).contains({protocol::to_hex(key(2)), "member"}));
  CHECK(list_matches_members(*this, community));
}

TEST_CASE_METHOD(membership_fixture, "a join without an invite is refused once the community row says closed",
                 "[integration][membership][access]") {
  auto owner = key(1), erin = key(5);
  REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner)).committed);
  // A pod whose cache still says open sends a join that needs no invite.
  auto join = command(membership_change::claim_membership, erin);
  join.requested_by = erin;
  auto closing = communities.set_access(community, true, relay_key, now_seconds());
  REQUIRE(closing.result == storage::lifecycle_result::changed);
  auto refused = apply(join);
  REQUIRE(refused.committed);
  CHECK(refused.results[0].outcome == outcome::invite_invalid);
  CHECK_FALSE(refused.list);
  for (const auto& [pubkey, role] : stored_members(community))
    CHECK(pubkey != protocol::to_hex(erin));
  // One that carries an invite code (Flotilla's invite link) is a claim of that code: a valid
  // one admits, and is used up.
  auto frank = key(7);
  auto invite = members.mint_invite(community, std::nullopt, 1, 3600, now_seconds());
  REQUIRE(invite);
  auto coded = command(membership_change::claim_membership, frank);
  coded.requested_by = frank;
  coded.invite_code = invite->code;
  auto admitted = apply(coded);
  CHECK(admitted.results[0].outcome == outcome::changed);
  require_list_is_live(*this, admitted, community);
  auto used_up = coded;
  used_up.subject = key(8);
  used_up.requested_by = used_up.subject;
  CHECK(apply(used_up).results[0].outcome == outcome::invite_exhausted);

  // An operator's add (no requester) is not a join: it still admits.
  auto added = apply(command(membership_change::add_member, erin));
  CHECK(added.results[0].outcome == outcome::changed);

  // Open again: a join needs no invite.
  auto other = key(6);
  REQUIRE(communities.set_access(community, false, relay_key, now_seconds()).result
          == storage::lifecycle_result::changed);
  auto open_join = command(membership_change::claim_membership, other);
  open_join.requested_by = other;
  CHECK(apply(open_join).results[0].outcome == outcome::changed);
}

TEST_CASE_METHOD(membership_fixture, "an archived community takes no queued request, only the operator's commands",
                 "[integration][membership][access]") {
  auto owner = key(1), erin = key(5), gus = key(9);
  REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner)).committed);
  auto before = live_lists(community);
  // Queued on a pod before the archive, applied after it.
  auto join = command(membership_change::claim_membership, erin);
  join.requested_by = erin;
  join.request_id = key(10); // the id of the 28934 that asked
  auto ban = command(membership_change::ban_pubkey, gus);
  ban.requested_by = owner;
  REQUIRE(communities.set_archived(community, true) == storage::lifecycle_result::changed);
  std::vector queued{join, ban};
  auto refused = members.apply(community, queued, now_seconds());
  REQUIRE(refused.committed);
  REQUIRE(refused.results.size() == 2);
  CHECK(refused.results[0].outcome == outcome::archived);
  CHECK(refused.results[1].outcome == outcome::archived);
  CHECK_FALSE(refused.list);
  CHECK(stored_members(community).size() == 1);
  CHECK(live_lists(community) == before);
  // The operator's own command applies, in its place among refused ones.
  std::vector mixed{join, command(membership_change::add_member, gus)};
  auto applied = members.apply(community, mixed, now_seconds() + 1);
  REQUIRE(applied.results.size() == 2);
  CHECK(applied.results[0].outcome == outcome::archived);
  CHECK(applied.results[1].outcome == outcome::changed);
  require_list_is_live(*this, applied, community);
  CHECK(stored_members(community).size() == 2);
  // Unarchived, the same request is applied: it was not tried, so not remembered.
  REQUIRE(communities.set_archived(community, false) == storage::lifecycle_result::changed);
  CHECK(members.apply(community, std::span(&join, 1), now_seconds() + 2).results[0].outcome == outcome::changed);
}

TEST_CASE_METHOD(membership_fixture, "a user holds a bounded number of open invites, the operator any",
                 "[integration][membership][bounds]") {
  auto owner = key(1), stranger = key(9);
  REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner)).committed);
  auto now = now_seconds();
  std::optional<storage::minted_invite> last;
  for (std::int64_t i = 0; i < storage::max_open_invites_per_user; ++i)
    REQUIRE((last = members.mint_invite(community, owner, 1, 3600, now)));
  CHECK_FALSE(members.mint_invite(community, owner, 1, 3600, now));
  CHECK(members.last_error().empty()); // refused, not failed
  CHECK(members.last_invite_refusal() == storage::invite_refusal::too_many);
  CHECK_FALSE(members.mint_invite(community, stranger, 1, 3600, now));
  CHECK(members.last_invite_refusal() == storage::invite_refusal::not_allowed);
  CHECK(members.mint_invite(community, std::nullopt, 1, 3600, now));
  // An invite used up is no longer open.
  auto join = command(membership_change::claim_invite, key(7));
  join.requested_by = key(7);
  join.invite_code = last->code;
  REQUIRE(apply(join).results[0].outcome == outcome::changed);
  CHECK(members.mint_invite(community, owner, 1, 3600, now));
  CHECK_FALSE(members.mint_invite(community, owner, 1, 3600, now));
  // Expired invites no longer count.
  CHECK(members.mint_invite(community, owner, 1, 3600, now + 3601));
  // Nor do open ones minted more than a day ago (codes of many uses stay open for days).
  for (std::int64_t i = 1; i < storage::max_open_invites_per_user; ++i)
    REQUIRE(members.mint_invite(community, owner, 0, 7 * 86400, now + 3601));
  CHECK_FALSE(members.mint_invite(community, owner, 0, 7 * 86400, now + 3601));
  (void)scalar(connection, "UPDATE invites SET created_at = now() - interval '25 hours'");
  CHECK(members.mint_invite(community, owner, 0, 7 * 86400, now + 3601));
}

TEST_CASE_METHOD(membership_fixture, "a join refused for a full community is applied when sent again with room",
                 "[integration][membership][bounds]") {
  auto owner = key(1);
  std::vector<storage::membership_command> everyone{
    command(membership_change::provision_owner, owner, member_role::owner)};
  // A user's own join is full at max_self_joined_members (the rest is kept for managers' adds).
  for (std::uint32_t i = 1; i < storage::max_self_joined_members; ++i) {
    protocol::bytes32 k{};
    std::memcpy(k.data(), &i, sizeof i);
    k[31] = 0xee;
    everyone.push_back(command(membership_change::add_member, k));
  }
  REQUIRE(paced(members, community, everyone).committed);
  auto newcomer = key(8);
  auto join = command(membership_change::claim_membership, newcomer);
  join.requested_by = newcomer;
  join.request_id = key(42);
  auto full = apply(join);
  REQUIRE(full.committed);
  CHECK(full.results[0].outcome == outcome::community_full);
  CHECK_FALSE(full.list);
  REQUIRE(apply(command(membership_change::remove_member, everyone.back().subject)).committed);
  CHECK(apply(join).results[0].outcome == outcome::changed); // the same request, with room now
  CHECK(apply(join).results[0].outcome == outcome::already_member);
}

TEST_CASE_METHOD(membership_fixture, "an admin's invite code stops admitting once the admin is removed",
                 "[integration][membership]") {
  auto owner = key(1), admin = key(2), member = key(3);
  REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner)).committed);
  REQUIRE(apply(command(membership_change::add_member, admin, member_role::admin)).committed);
  REQUIRE(apply(command(membership_change::add_member, member)).committed);
  auto now = now_seconds();
  auto by_admin = members.mint_invite(community, admin, 0, 3600, now);
  auto by_member = members.mint_invite(community, member, 0, 3600, now);
  REQUIRE(by_admin);
  CHECK_FALSE(by_member); // members may not invite here
  (void)scalar(connection, "UPDATE communities SET members_may_invite = true");
  by_member = members.mint_invite(community, member, 0, 3600, now);
  REQUIRE(by_member);
  auto join = [&](std::uint8_t who, const std::string& code) {
    auto c = command(membership_change::claim_invite, key(who));
    c.requested_by = key(who);
    c.invite_code = code;
    return apply(c).results[0].outcome;
  };
  CHECK(join(10, by_admin->code) == outcome::changed);
  CHECK(join(11, by_member->code) == outcome::changed);
  REQUIRE(apply(command(membership_change::remove_member, admin)).committed);
  (void)scalar(connection, "UPDATE communities SET members_may_invite = false");
  CHECK(join(12, by_admin->code) == outcome::invite_invalid);
  CHECK(join(13, by_member->code) == outcome::invite_invalid);
  CHECK(members.verify(community).matches);
}

TEST_CASE_METHOD(membership_fixture, "a banned key is made owner neither at start nor by a transfer",
                 "[integration][membership]") {
  auto first = key(1), second = key(2), outsider = key(3);
  REQUIRE(apply(command(membership_change::provision_owner, first, member_role::owner)).committed);
  REQUIRE(apply(command(membership_change::transfer_owner, second, member_role::owner)).committed);
  auto ban_first = command(membership_change::ban_pubkey, first);
  ban_first.requested_by = second;
  REQUIRE(apply(ban_first).results[0].outcome == outcome::changed);
  // The old COMB_OWNER_PUBKEY at the next start: banned by the new owner, it stays out.
  auto restart = apply(command(membership_change::provision_owner, first, member_role::owner));
  CHECK(restart.results[0].outcome == outcome::banned);
  auto ban_outsider = command(membership_change::ban_pubkey, outsider);
  REQUIRE(apply(ban_outsider).results[0].outcome == outcome::changed);
  CHECK(apply(command(membership_change::transfer_owner, outsider, member_role::owner)).results[0].outcome
        == outcome::banned);
  CHECK(stored_members(community)
        == std::set<std::pair<std::string, std::string>>{{protocol::to_hex(second), "owner"}});
  // Once the ban is lifted, the start makes it owner again, as documented.
  REQUIRE(apply(command(membership_change::unban_pubkey, first)).results[0].outcome == outcome::changed);
  CHECK(apply(command(membership_change::provision_owner, first, member_role::owner)).results[0].outcome
        == outcome::changed);
}

TEST_CASE_METHOD(membership_fixture, "a list far ahead of the writer's clock is written after at once, not waited for",
                 "[integration][membership]") {
  auto bob = key(2), carol = key(3);
  const std::int64_t frozen = now_seconds();
  // comb-admin, run where the clock is 100 s ahead, writes the newest list.
  auto add = command(membership_change::add_member, bob);
  REQUIRE(members.apply(community, std::span(&add, 1), frozen + 100).committed);
  auto remove = command(membership_change::remove_member, bob);
  auto removed = members.apply(community, std::span(&remove, 1), frozen);
  REQUIRE(removed.committed);
  CHECK(removed.retry_at == 0);
  CHECK(removed.clock_behind_seconds == 100);
  REQUIRE(removed.list);
  CHECK(removed.list->created_at == frozen + 101);
  // A join waits for the clock, however far behind (lists keep pace with it): a wave of joins
  // must not carry the list hours ahead.
  auto add_carol = command(membership_change::add_member, carol);
  CHECK(members.apply(community, std::span(&add_carol, 1), frozen).retry_at == frozen + 102);
}
