// SPDX-License-Identifier: MIT
// NIP-86 storage against a real Postgres: a pubkey ban removes the member in the same
// transaction as its list and 8001 (or not at all), a banned pubkey or event is refused by the
// event store, and a NIP-98 auth event is spent once across store instances.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <utility>

#include "protocol/canonical_json.hpp"
#include "protocol/room_events.hpp"
#include "storage/community_store.hpp"
#include "storage/management_store.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_transaction.hpp"
#include "storage/store_plan.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::member_role;
using storage::membership_change;
using outcome = storage::membership_outcome;

namespace {

storage::membership_command by(storage::membership_command c, const protocol::bytes32& requester,
                               std::string reason = {}) {
  c.requested_by = requester;
  c.reason = std::move(reason);
  return c;
}

std::vector<storage::ban_entry> banned_pubkeys(membership_fixture& f) {
  storage::pg_connection reader(f.database.conninfo());
  auto bans = storage::load_bans(reader, f.community);
  REQUIRE(bans);
  return bans->pubkeys;
}

std::string count_of(membership_fixture& f, const std::string& sql) {
  storage::pg_connection reader(f.database.conninfo());
  return scalar(reader, sql);
}

struct banned_community : membership_fixture {
  banned_community() {
    REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner))
              .results[0].outcome == outcome::changed);
    REQUIRE(apply(command(membership_change::add_member, admin, member_role::admin)).committed);
    REQUIRE(apply(command(membership_change::add_member, admin2, member_role::admin)).committed);
    REQUIRE(apply(command(membership_change::add_member, bob)).committed);
  }

  protocol::bytes32 owner = key(1), admin = key(2), admin2 = key(3), bob = key(4), erin = key(5);
};

} // namespace

TEST_CASE_METHOD(banned_community, "a ban removes the member with its list and 8001 and is stored",
                 "[integration][nip86]") {
  auto banned = apply(by(command(membership_change::ban_pubkey, bob), admin, "spam"));
  REQUIRE(banned.committed);
  CHECK(banned.results[0].outcome == outcome::changed);
  REQUIRE(banned.list);
  REQUIRE(banned.results[0].delta);
  CHECK(banned.results[0].delta->kind == 8001u);
  auto lists = live_lists(community);
  REQUIRE(lists.size() == 1);
  CHECK(lists[0] == *banned.list);
  CHECK(listed(*banned.list) == stored_members(community));
  CHECK_FALSE(stored_members(community).contains({hex(bob), "member"}));
  REQUIRE(banned_pubkeys(*this) == std::vector<storage::ban_entry>{{bob, "spam"}});

  // Banned: a join, an add and their events are refused; nothing is written for them.
  auto join = apply(command(membership_change::claim_membership, bob));
  CHECK(join.results[0].outcome == outcome::banned);
  CHECK_FALSE(join.list);
  CHECK(apply(by(command(membership_change::add_member, bob), owner)).results[0].outcome
        == outcome::banned);
  check_outcome(store_one(events, community, author(4).sign(1, now_seconds())),
                storage::store_outcome::status::refused, storage::msg_banned_author);
  CHECK(live_lists(community)[0] == *banned.list);

  // A ban of a non-member stores the ban and writes no list.
  auto outsider = apply(by(command(membership_change::ban_pubkey, erin), owner));
  CHECK(outsider.results[0].outcome == outcome::changed);
  CHECK_FALSE(outsider.list);
  CHECK(banned_pubkeys(*this).size() == 2);

  auto lifted = apply(by(command(membership_change::unban_pubkey, bob), admin));
  CHECK(lifted.results[0].outcome == outcome::changed);
  CHECK_FALSE(lifted.list);
  CHECK(apply(command(membership_change::claim_membership, bob)).results[0].outcome
        == outcome::changed);
  check_outcome(store_one(events, community, author(4).sign(1, now_seconds())),
                storage::store_outcome::status::stored, "");
}

TEST_CASE_METHOD(banned_community, "an admin lifts an admin's ban, not the owner's nor the operator's",
                 "[integration][nip86]") {
  REQUIRE(apply(by(command(membership_change::ban_pubkey, bob), owner, "owner's call")).results[0].outcome
          == outcome::changed);
  REQUIRE(apply(command(membership_change::ban_pubkey, erin)).results[0].outcome == outcome::changed);
  for (const auto& subject : {bob, erin})
    CHECK(apply(by(command(membership_change::unban_pubkey, subject), admin)).results[0].outcome
          == outcome::not_allowed);
  CHECK(banned_pubkeys(*this).size() == 2);
  // The owner lifts the operator's ban; an admin lifts another admin's.
  CHECK(apply(by(command(membership_change::unban_pubkey, erin), owner)).results[0].outcome == outcome::changed);
  REQUIRE(apply(by(command(membership_change::ban_pubkey, erin), admin2)).results[0].outcome == outcome::changed);
  CHECK(apply(by(command(membership_change::unban_pubkey, erin), admin)).results[0].outcome == outcome::changed);
  // The operator (the CLI: no requester) lifts any.
  CHECK(apply(command(membership_change::unban_pubkey, bob)).results[0].outcome == outcome::changed);
  CHECK(banned_pubkeys(*this).empty());
}

TEST_CASE_METHOD(banned_community, "nobody bans the owner and only the owner bans an admin",
                 "[integration][nip86]") {
  auto before = live_lists(community);
  CHECK(apply(by(command(membership_change::ban_pubkey, owner), admin)).results[0].outcome
        == outcome::is_owner);
  CHECK(apply(by(command(membership_change::ban_pubkey, admin2), admin)).results[0].outcome
        == outcome::not_allowed);
  CHECK(apply(by(command(membership_change::ban_pubkey, erin), bob)).results[0].outcome
        == outcome::not_allowed);
  CHECK(apply(command(membership_change::ban_pubkey, owner)).results[0].outcome
        == outcome::is_owner);
  CHECK(banned_pubkeys(*this).empty());
  CHECK(live_lists(community) == before);
  auto by_owner = apply(by(command(membership_change::ban_pubkey, admin2), owner));
  CHECK(by_owner.results[0].outcome == outcome::changed);
  CHECK(listed(*by_owner.list) == stored_members(community));
}

TEST_CASE_METHOD(banned_community, "a ban whose list cannot be written leaves no ban and no change",
                 "[integration][nip86]") {
  auto before = live_lists(community);
  // Make the 8001 insert fail inside the ban's transaction.
  storage::pg_connection admin_connection(database.conninfo());
  scalar(admin_connection,
         "CREATE FUNCTION refuse_8001() RETURNS trigger LANGUAGE plpgsql AS"
         " $$ BEGIN IF NEW.kind = 8001 THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$");
  scalar(admin_connection, "CREATE TRIGGER refuse_8001 BEFORE INSERT ON events FOR EACH ROW"
                           " EXECUTE FUNCTION refuse_8001()");
  auto failed = apply(by(command(membership_change::ban_pubkey, bob), owner, "spam"));
  CHECK_FALSE(failed.committed);
  CHECK(failed.results[0].outcome == outcome::failed);
  CHECK(banned_pubkeys(*this).empty());
  CHECK(stored_members(community).contains({hex(bob), "member"}));
  CHECK(live_lists(community) == before);
}

TEST_CASE_METHOD(banned_community, "a banned event is deleted and never stored again",
                 "[integration][nip86]") {
  storage::management_store store(connection, relay_key);
  auto post = author(4).sign(1, now_seconds(), {{"t", "x"}}, "bad");
  check_outcome(store_one(events, community, post), storage::store_outcome::status::stored, "");
  auto other = add_community("b.example");
  check_outcome(store_one(events, other, post), storage::store_outcome::status::stored, "");

  CHECK(store.ban_event(community, post->id, "off topic", owner) == storage::management_result::changed);
  // The pod's ban list replays its own ban at this version over reloads read before it.
  CHECK(std::to_string(store.last_version())
        == count_of(*this, "SELECT state_version FROM communities WHERE id = " + std::to_string(community)));
  CHECK(count_of(*this, "SELECT count(*) FROM events WHERE id = '\\x" + hex(post->id) + "'") == "1");
  CHECK(count_of(*this, "SELECT count(*) FROM event_tags WHERE community_id = "
                          + std::to_string(community) + " AND event_id = '\\x" + hex(post->id) + "'")
        == "0");
  check_outcome(store_one(events, community, post), storage::store_outcome::status::refused,
                storage::msg_banned_event);
  CHECK(store.ban_event(community, post->id, "", owner) == storage::management_result::unchanged);
  // Nothing changed: the ban held at the version read under the community's lock.
  CHECK(std::to_string(store.last_version())
        == count_of(*this, "SELECT state_version FROM communities WHERE id = " + std::to_string(community)));
  storage::pg_connection reader(database.conninfo());
  auto bans = storage::load_bans(reader, community);
  REQUIRE(bans);
  REQUIRE(bans->events == std::vector<storage::ban_entry>{{post->id, "off topic"}});

  // The relay's own list is never banned (it would break list == members).
  auto list = live_lists(community).at(0);
  CHECK(store.ban_event(community, list.id, "", owner) == storage::management_result::refused);
  CHECK(live_lists(community).size() == 1);
  // Nor the room changes it issues (9000, 9001, 9008: kinds clients send too), signed with the
  // community's key or, by an older comb, with the relay key.
  const auto signer_key = signer(community);
  for (const protocol::key_pair* key : {&std::as_const(relay_key), &signer_key}) {
    auto issued = protocol::sign_room_member_change(*key, 9000, "pizza", owner, now_seconds());
    storage::insert_event(connection, community,
                          storage::relay_signed_event{issued, protocol::render_event_json(issued)});
    CHECK(store.ban_event(community, issued.id, "", owner) == storage::management_result::refused);
  }

  // Bans are bounded: each one makes every pod reload them all.
  REQUIRE(connection.exec("INSERT INTO banned_events (community_id, event_id, reason, banned_by)"
                          " SELECT " + std::to_string(community) + ", sha256(i::text::bytea), '', '\\x"
                          + hex(owner) + "' FROM generate_series(2, " + std::to_string(storage::max_banned_events)
                          + ") i").ok());
  auto late = author(5).sign(1, now_seconds(), {}, "one too many");
  CHECK(store.ban_event(community, late->id, "", owner) == storage::management_result::full);
  CHECK(store.ban_event(community, post->id, "again", owner) == storage::management_result::unchanged);
  REQUIRE(connection.exec("DELETE FROM banned_events WHERE community_id = " + std::to_string(community)
                          + " AND event_id <> '\\x" + hex(post->id) + "'").ok());

  CHECK(store.allow_event(community, post->id) == storage::management_result::changed);
  CHECK(store.allow_event(community, post->id) == storage::management_result::unchanged);
  check_outcome(store_one(events, community, post), storage::store_outcome::status::stored, "");
}

TEST_CASE_METHOD(banned_community, "pubkey bans are bounded for NIP-86 callers", "[integration][nip86]") {
  storage::management_store store(connection, relay_key);
  CHECK(store.pubkey_bans_full(community) == false);
  auto fill_to = [&](std::int64_t bans) {
    REQUIRE(connection.exec("INSERT INTO banned_pubkeys (community_id, pubkey, reason)"
                            " SELECT " + std::to_string(community) + ", sha256(i::text::bytea), ''"
                            " FROM generate_series(1, " + std::to_string(bans) + ") i ON CONFLICT DO NOTHING").ok());
  };
  fill_to(storage::max_banned_pubkeys - 1);
  CHECK(store.pubkey_bans_full(community) == false);
  fill_to(storage::max_banned_pubkeys);
  CHECK(store.pubkey_bans_full(community) == true);
}

TEST_CASE_METHOD(banned_community, "an admin demoted while its ban or edit waited on the row changes nothing",
                 "[integration][nip86][race]") {
  storage::management_store store(connection, relay_key);
  auto post = author(4).sign(1, now_seconds(), {}, "flagged");
  check_outcome(store_one(events, community, post), storage::store_outcome::status::stored, "");
  const auto id = std::to_string(community);

  // A demotion in flight: it holds the community row, as every change of roles does.
  storage::pg_connection demoter(database.conninfo());
  (void)scalar(demoter, "BEGIN");
  (void)scalar(demoter, "SELECT 1 FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE", {id});
  (void)scalar(demoter, "UPDATE members SET role = 'member' WHERE community_id = $1::bigint"
                        " AND pubkey = '\\x" + hex(admin) + "'", {id});

  REQUIRE_FALSE(connection.ensure_connected());
  int caller_pid = connection.backend_pid();
  storage::management_result banned = storage::management_result::failed;
  // The role was read (admin) before the demotion committed; the ban waits for the row.
  std::thread ban([&] { banned = store.ban_event(community, post->id, "", admin, admin); });
  storage::pg_connection observer(database.conninfo());
  bool waited = blocked_on_lock(observer, caller_pid);
  (void)scalar(demoter, "COMMIT");
  ban.join();
  REQUIRE(waited);
  CHECK(banned == storage::management_result::forbidden);
  CHECK(count_of(*this, "SELECT count(*) FROM events WHERE community_id = " + id + " AND id = '\\x"
                          + hex(post->id) + "'") == "1");
  CHECK(count_of(*this, "SELECT count(*) FROM banned_events") == "0");

  // Demoted already: the same answer for lifting a ban and for the NIP-11 fields; an admin
  // still in office is served.
  CHECK(store.allow_event(community, post->id, admin) == storage::management_result::forbidden);
  storage::community_info_update rename;
  rename.name = "taken over";
  rename.requested_by = admin;
  CHECK(communities.set_info(community, rename) == storage::lifecycle_result::forbidden);
  CHECK(count_of(*this, "SELECT coalesce(name, '') FROM communities WHERE id = " + id) == "");
  rename.requested_by = admin2;
  CHECK(communities.set_info(community, rename) == storage::lifecycle_result::changed);
  CHECK(store.ban_event(community, post->id, "", admin2, admin2) == storage::management_result::changed);
}

TEST_CASE_METHOD(membership_fixture, "a NIP-98 auth event is spent once across pods",
                 "[integration][nip86]") {
  storage::pg_connection other_connection(database.conninfo());
  storage::management_store pod_a(connection, relay_key);
  storage::management_store pod_b(other_connection, relay_key);
  auto now = now_seconds();
  auto id = author(9).sign(27235, now)->id;
  CHECK(pod_a.spend_http_auth(id, now + 60, now) == true);
  CHECK(pod_b.spend_http_auth(id, now + 60, now) == false);
  CHECK(pod_a.spend_http_auth(id, now + 60, now) == false);

  // A minute past its window the row is purged: by then the time check refuses the event on
  // any pod whose clock is less than a minute behind.
  // (One spent two minutes ago, whose window ended 61 s ago.)
  CHECK(pod_b.spend_http_auth(author(9).sign(27235, now - 121)->id, now - 61, now - 121) == true);
  CHECK(count_of(*this, "SELECT count(*) FROM used_http_auth") == "2");
  CHECK(pod_b.spend_http_auth(author(9).sign(27235, now + 2)->id, now + 62, now) == true);
  CHECK(count_of(*this, "SELECT count(*) FROM used_http_auth") == "2");
  // A pod whose clock is far ahead purges by the database's clock: the first is still spent.
  CHECK(pod_b.spend_http_auth(author(9).sign(27235, now + 3)->id, now + 63, now + 1000) == true);
  CHECK(count_of(*this, "SELECT count(*) FROM used_http_auth") == "3");
  CHECK(pod_a.spend_http_auth(id, now + 60, now) == false);
}

TEST_CASE_METHOD(membership_fixture, "two pods spending the same auth events at once: each wins once",
                 "[integration][nip86]") {
  constexpr int rounds = 200;
  auto now = now_seconds();
  std::vector<protocol::bytes32> ids;
  for (int i = 0; i < rounds; ++i)
    ids.push_back(author(10).sign(27235, now - i)->id);
  std::atomic<int> wins{0}, errors{0};
  auto spend_all = [&] {
    storage::pg_connection own(database.conninfo());
    storage::management_store store(own, relay_key);
    for (const auto& id : ids) {
      auto fresh = store.spend_http_auth(id, now + 60, now);
      if (!fresh)
        ++errors;
      else if (*fresh)
        ++wins;
    }
  };
  std::thread a(spend_all), b(spend_all);
  a.join();
  b.join();
  CHECK(errors == 0);
  CHECK(wins == rounds);
}

TEST_CASE_METHOD(membership_fixture, "community info is set per field and read with the host",
                 "[integration][nip86]") {
  auto owner = key(1);
  REQUIRE(apply(command(membership_change::provision_owner, owner, member_role::owner)).committed);
  storage::community_info_update update;
  update.name = "Hive";
  update.icon = "https://img.example/hive.png";
  CHECK(communities.set_info(community, update) == storage::lifecycle_result::changed);
  CHECK(communities.set_info(community, update) == storage::lifecycle_result::unchanged);
  storage::community_info_update describe;
  describe.description = "bees";
  CHECK(communities.set_info(community, describe) == storage::lifecycle_result::changed);
  auto row = communities.find_by_host("a.example");
  REQUIRE(row);
  CHECK(row->info.name == "Hive");
  CHECK(row->info.description == "bees");
  CHECK(row->info.icon == "https://img.example/hive.png");
  CHECK(row->info.owner_hex == hex(owner));
  storage::community_info_update clear;
  clear.icon = "";
  CHECK(communities.set_info(community, clear) == storage::lifecycle_result::changed);
  CHECK(communities.find_by_host("a.example")->info.icon.empty());
  CHECK(communities.find_by_host("a.example")->info.name == "Hive");
}

TEST_CASE_METHOD(banned_community, "an admin lifts no event ban the owner or the operator made",
                 "[integration][nip86]") {
  storage::management_store store(connection, relay_key);
  auto by_owner = author(4).sign(1, now_seconds(), {}, "banned by the owner");
  auto by_operator = author(4).sign(1, now_seconds(), {}, "banned by the operator");
  auto by_admin = author(4).sign(1, now_seconds(), {}, "banned by an admin");
  CHECK(store.ban_event(community, by_owner->id, "", owner, owner) == storage::management_result::changed);
  // One with nobody named (written by hand, or before bans named their maker).
  REQUIRE(connection.exec("INSERT INTO banned_events (community_id, event_id) VALUES ("
                          + std::to_string(community) + ", '\\x" + hex(by_operator->id) + "')").ok());
  CHECK(store.ban_event(community, by_admin->id, "", admin, admin) == storage::management_result::changed);
  const std::string banned_count = "SELECT count(*) FROM banned_events";
  REQUIRE(count_of(*this, banned_count) == "3");

  CHECK(store.allow_event(community, by_owner->id, admin) == storage::management_result::owner_held);
  CHECK(store.allow_event(community, by_operator->id, admin2) == storage::management_result::owner_held);
  CHECK(count_of(*this, banned_count) == "3");
  // Another admin's ban is an admin's to lift; the owner lifts any.
  CHECK(store.allow_event(community, by_admin->id, admin2) == storage::management_result::changed);
  CHECK(store.allow_event(community, by_owner->id, owner) == storage::management_result::changed);
  CHECK(store.allow_event(community, by_operator->id, owner) == storage::management_result::changed);
  CHECK(count_of(*this, banned_count) == "0");
  // Nothing banned: nothing to refuse.
  CHECK(store.allow_event(community, by_owner->id, admin) == storage::management_result::unchanged);
}

TEST_CASE_METHOD(banned_community, "an admin bans no event of the owner's, as nobody bans the owner",
                 "[integration][nip86]") {
  storage::management_store store(connection, relay_key);
  auto owners = author(1).sign(1, now_seconds(), {}, "the owner's");
  auto admins = author(3).sign(1, now_seconds(), {}, "another admin's");
  check_outcome(store_one(events, community, owners), storage::store_outcome::status::stored, "");
  check_outcome(store_one(events, community, admins), storage::store_outcome::status::stored, "");
  const std::string stored_count = "SELECT count(*) FROM events WHERE kind = 1";
  const std::string banned_count = "SELECT count(*) FROM banned_events";
  // Refused: the ban would delete it, and the owner could not even see whose ban it was.
  CHECK(store.ban_event(community, owners->id, "", admin, admin) == storage::management_result::owner_held);
  CHECK(count_of(*this, stored_count) == "2");
  CHECK(count_of(*this, banned_count) == "0");
  // Another admin's event is an admin's to ban; the owner bans any, their own too.
  CHECK(store.ban_event(community, admins->id, "", admin, admin) == storage::management_result::changed);
  CHECK(store.ban_event(community, owners->id, "", owner, owner) == storage::management_result::changed);
  CHECK(count_of(*this, stored_count) == "0");
  CHECK(count_of(*this, banned_count) == "2");
}

TEST_CASE_METHOD(banned_community, "the owner banning again what an admin banned makes the ban the owner's",
                 "[integration][nip86]") {
  // A pubkey: the admin's ban, then the owner's; no admin lifts it after.
  REQUIRE(apply(by(command(membership_change::ban_pubkey, erin), admin, "spam")).results[0].outcome
          == outcome::changed);
  CHECK(apply(by(command(membership_change::ban_pubkey, erin), owner)).results[0].outcome == outcome::changed);
  CHECK(apply(by(command(membership_change::ban_pubkey, erin), owner)).results[0].outcome == outcome::nothing_to_do);
  CHECK(apply(by(command(membership_change::ban_pubkey, erin), admin2)).results[0].outcome == outcome::nothing_to_do);
  for (const auto& lifter : {admin, admin2})
    CHECK(apply(by(command(membership_change::unban_pubkey, erin), lifter)).results[0].outcome
          == outcome::not_allowed);
  auto bans = banned_pubkeys(*this);
  REQUIRE(bans.size() == 1);
  CHECK(bans[0].reason == "spam"); // the owner gave none: the admin's stays
  CHECK(apply(by(command(membership_change::unban_pubkey, erin), owner)).results[0].outcome == outcome::changed);

  // An event: the same.
  storage::management_store store(connection, relay_key);
  auto post = author(4).sign(1, now_seconds(), {}, "banned twice");
  CHECK(store.ban_event(community, post->id, "", admin, admin) == storage::management_result::changed);
  CHECK(store.ban_event(community, post->id, "", owner, owner) == storage::management_result::changed);
  CHECK(store.ban_event(community, post->id, "", owner, owner) == storage::management_result::unchanged);
  CHECK(store.ban_event(community, post->id, "", admin2, admin2) == storage::management_result::unchanged);
  CHECK(store.allow_event(community, post->id, admin) == storage::management_result::owner_held);
  CHECK(store.allow_event(community, post->id, owner) == storage::management_result::changed);
}

TEST_CASE_METHOD(banned_community, "a manager's event ban or NIP-11 edit meets an archived community refused",
                 "[integration][nip86]") {
  storage::management_store store(connection, relay_key);
  auto post = author(4).sign(1, now_seconds(), {}, "kept in the archive");
  check_outcome(store_one(events, community, post), storage::store_outcome::status::stored, "");
  REQUIRE(communities.set_archived(community, true) == storage::lifecycle_result::changed);
  // Let in by a host lookup a moment old: the row decides.
  CHECK(store.ban_event(community, post->id, "", owner, owner) == storage::management_result::archived);
  CHECK(store.allow_event(community, post->id, owner) == storage::management_result::archived);
  CHECK(count_of(*this, "SELECT count(*) FROM events WHERE kind = 1") == "1");
  storage::community_info_update rename;
  rename.name = "Renamed";
  rename.requested_by = owner;
  CHECK(communities.set_info(community, rename) == storage::lifecycle_result::archived);
  // The operator may.
  rename.requested_by.reset();
  CHECK(communities.set_info(community, rename) == storage::lifecycle_result::changed);
}
