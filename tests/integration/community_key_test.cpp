// SPDX-License-Identifier: MIT
// Each community signs with a key of its own (protocol::derive_community_key), and what an older
// comb signed with the relay key moves to it at start-up (storage::move_to_community_key).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "protocol/canonical_json.hpp"
#include "protocol/event_json.hpp"
#include "protocol/community_key.hpp"
#include "protocol/event_check.hpp"
#include "protocol/room_events.hpp"
#include "storage/community_rekey.hpp"
#include "storage/member_list.hpp"
#include "storage/membership_steps.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/relay_identity.hpp"
#include "storage/room_transaction.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::membership_change;
using storage::member_role;

namespace {

/// Stores `ev` as comb stores the relay's events (a list without tag rows).
void store(membership_fixture& f, const protocol::event& ev) {
  storage::relay_signed_event stored{ev, protocol::render_event_json(ev)};
  if (ev.kind == storage::member_list_kind)
    storage::membership_steps::insert_list(f.connection, f.community, ev, stored.json);
  else
    storage::insert_event(f.connection, f.community, stored);
}

/// What an older comb left: the relay-key signed list, deltas, role definition, room state and
/// room join, and nothing signed with the community's key. Returns what it stored.
std::vector<protocol::event> older_comb_state(membership_fixture& f, std::int64_t at) {
  REQUIRE(f.connection.exec("DELETE FROM events WHERE community_id = $1::bigint",
                            {std::to_string(f.community)}).ok());
  auto stored = f.members.members(f.community);
  REQUIRE(stored);
  protocol::room_state room;
  room.exists = true;
  room.id = "pizza";
  room.meta.name = "Pizza";
  room.members.push_back({key(2), {}});
  const auto& relay = f.relay_key;
  std::vector<protocol::event> old{
    storage::sign_member_list(relay, *stored, at),
    storage::sign_member_delta(relay, 8000, key(2), at),
    storage::sign_member_delta(relay, 8001, key(3), at - 1),
    storage::sign_role_definition(relay, member_role::owner, at),
    protocol::sign_room_metadata(relay, room, at),
    protocol::sign_room_members(relay, room, at),
    protocol::sign_room_member_change(relay, 9000, room.id, key(2), at)};
  for (const auto& ev : old)
    store(f, ev);
  return old;
}

/// Deltas and the relay's room changes: history, which keeps the key that signed it.
bool history(const protocol::event& ev) {
  return ev.kind == 8000 || ev.kind == 8001 || ev.kind == 9000;
}

std::string count_signed_by(membership_fixture& f, const protocol::key_pair& key) {
  return scalar(f.connection, "SELECT count(*) FROM events WHERE community_id = $1::bigint AND pubkey = $2::bytea",
                {std::to_string(f.community), "\\x" + protocol::to_hex(key.public_key())});
}

/// The stored event signed by `key` with the kind, tags, content and second of `old`.
std::optional<protocol::event> counterpart(membership_fixture& f, const protocol::key_pair& key,
                                           const protocol::event& old) {
  auto reply = f.connection.exec("SELECT raw FROM events WHERE community_id = $1::bigint AND pubkey = $2::bytea"
                                 " AND kind = $3::int AND created_at = $4::bigint",
                                 {std::to_string(f.community), storage::bytea_param(key.public_key()),
                                  std::to_string(old.kind), std::to_string(old.created_at)});
  REQUIRE(reply.ok());
  for (int row = 0; row < reply.rows(); ++row) {
    auto ev = storage::parse_stored_list(reply.text(row, 0));
    if (ev && ev->tags == old.tags && ev->content == old.content)
      return ev;
  }
  return std::nullopt;
}

} // namespace

TEST_CASE_METHOD(membership_fixture, "each community of a deployment signs with a key of its own",
                 "[integration][membership][nip43]") {
  const auto games = add_community("games.example");
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  auto owner = command(membership_change::provision_owner, key(1), member_role::owner);
  REQUIRE(paced(members, games, std::span(&owner, 1)).list);
  auto here = live_lists(community);
  auto there = live_lists(games);
  REQUIRE(here.size() == 1);
  REQUIRE(there.size() == 1);
  CHECK(here[0].pubkey == protocol::derive_community_key(relay_key, "a.example").public_key());
  CHECK(there[0].pubkey == protocol::derive_community_key(relay_key, "games.example").public_key());
  CHECK(here[0].pubkey != there[0].pubkey);
  CHECK(here[0].pubkey != relay_key.public_key());
  // The invite a member asks for (28935) is signed with the same key.
  auto invites_signed_by = members.signing_key(games);
  REQUIRE(invites_signed_by);
  CHECK(invites_signed_by->public_key() == there[0].pubkey);
}

TEST_CASE_METHOD(membership_fixture, "the list, role definitions and room state an older comb signed with the relay key move to the community's key once",
                 "[integration][membership][nip43]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  REQUIRE(apply(command(membership_change::add_member, key(2))).list);
  const std::int64_t at = now_seconds() - 100;
  auto old = older_comb_state(*this, at);
  const auto own = signer(community);
  // A newer room name already signed with the community's key: the relay-key one only goes.
  protocol::room_state renamed;
  renamed.id = "pizza";
  renamed.meta.name = "Pizza and more";
  store(*this, protocol::sign_room_metadata(own, renamed, at + 5));
  // An older member list of the room under the community's key: the moved one replaces it.
  store(*this, protocol::sign_room_members(own, renamed, at - 5));
  const auto version_before = scalar(connection, "SELECT state_version FROM communities WHERE id = $1::bigint",
                                     {std::to_string(community)});

  auto moved = storage::move_to_community_key(connection, relay_key, community, 2); // pages of 2
  REQUIRE(moved.committed);
  const auto kept = static_cast<std::size_t>(std::ranges::count_if(old, history));
  CHECK(moved.signed_again == old.size() - kept - 1);
  CHECK(moved.dropped == 1);
  CHECK(count_signed_by(*this, relay_key) == std::to_string(kept));
  for (const auto& ev : old) {
    INFO("kind " << ev.kind);
    auto now_signed = counterpart(*this, own, ev);
    if (history(ev)) { // a copy under a new id would show twice in apps that hold the first
      CHECK_FALSE(now_signed);
      CHECK(counterpart(*this, relay_key, ev));
      continue;
    }
    if (ev.kind == protocol::room_metadata_kind) {
      CHECK_FALSE(now_signed); // replaced by the newer name
      continue;
    }
    REQUIRE(now_signed);
    CHECK_FALSE(protocol::verify_event(*now_signed));
  }
  CHECK(members.verify(community).matches); // the live list is read under the community's key
  // The moved room members are found by their `p` like any stored event; the replaced copies'
  // tag rows went.
  CHECK(scalar(connection, "SELECT count(*) FROM event_tags WHERE community_id = $1::bigint AND name = 'p'"
                           " AND value = $2 AND kind = 39002",
               {std::to_string(community), protocol::to_hex(key(2))}) == "1");
  CHECK(scalar(connection, "SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = 39002",
               {std::to_string(community)}) == "1");
  CHECK(std::stoll(scalar(connection, "SELECT state_version FROM communities WHERE id = $1::bigint",
                          {std::to_string(community)})) > std::stoll(version_before));
  auto again = storage::move_to_community_key(connection, relay_key, community);
  REQUIRE(again.committed);
  CHECK(again.signed_again + again.dropped + again.unreadable == 0);

  // A stored row that cannot be read stays as it is, and the start goes on.
  (void)scalar(connection, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
                           " VALUES ($1::bigint, '\\x01', $2::bytea, 1, 39000, '{}') RETURNING 1",
               {std::to_string(community), "\\x" + protocol::to_hex(relay_key.public_key())});
  // So does one whose signature is not the relay key's: the community's key never signs it.
  auto forged = author(7).sign(39000, at, {{"d", "forged"}});
  REQUIRE(forged);
  (void)scalar(connection, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
                           " VALUES ($1::bigint, $2::bytea, $3::bytea, $4::bigint, 39000, $5) RETURNING 1",
               {std::to_string(community), "\\x" + protocol::to_hex(forged->id),
                "\\x" + protocol::to_hex(relay_key.public_key()), std::to_string(at),
                protocol::render_event_json(*forged)});
  auto unreadable = storage::move_to_community_key(connection, relay_key, community);
  REQUIRE(unreadable.committed);
  CHECK(unreadable.unreadable == 2);
  CHECK(unreadable.signed_again == 0);
  CHECK(count_signed_by(*this, relay_key) == std::to_string(kept + 2));
}

TEST_CASE_METHOD(membership_fixture, "pods that start at once move each relay-key event once",
                 "[integration][membership][nip43]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  auto old = older_comb_state(*this, now_seconds() - 100);
  std::atomic<std::size_t> signed_again{0}, committed{0};
  REQUIRE(two_pods_behind_the_lock(*this, [&](storage::pg_connection& pod) {
    auto moved = storage::move_to_community_key(pod, relay_key, community);
    committed += moved.committed;
    signed_again += moved.signed_again;
  }));
  CHECK(committed == 2);
  const auto replaced = old.size() - static_cast<std::size_t>(std::ranges::count_if(old, history));
  CHECK(signed_again == replaced);
  CHECK(count_signed_by(*this, signer(community)) == std::to_string(replaced));
  CHECK(live_lists(community).size() == 1);
}

TEST_CASE_METHOD(membership_fixture, "bans of the relay's own keys that an older comb stored are lifted at start-up",
                 "[integration][membership][nip43]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  const auto games = add_community("games.example");
  // An older pod refused to ban only the relay key; the community's key it did not know.
  const auto ban = [&](std::int64_t where, const protocol::bytes32& who) {
    (void)scalar(connection, "INSERT INTO banned_pubkeys (community_id, pubkey, reason)"
                             " VALUES ($1::bigint, $2::bytea, 'old pod') RETURNING 1",
                 {std::to_string(where), storage::bytea_param(who)});
  };
  ban(community, signer(community).public_key());
  ban(community, relay_key.public_key());
  ban(community, key(5));
  ban(games, signer(community).public_key()); // another community's key is a stranger here
  const auto version_of = [&](std::int64_t where) {
    return std::stoll(scalar(connection, "SELECT state_version FROM communities WHERE id = $1::bigint",
                             {std::to_string(where)}));
  };
  const auto before = version_of(community);
  const auto bans_in = [&](std::int64_t where) {
    return scalar(connection, "SELECT count(*) FROM banned_pubkeys WHERE community_id = $1::bigint",
                  {std::to_string(where)});
  };

  std::string error;
  CHECK(storage::lift_bans_of_own_keys(connection, relay_key, community, error) == 2u);
  CHECK(error.empty());
  CHECK(bans_in(community) == "1"); // key(5) stays banned
  CHECK(version_of(community) > before);
  CHECK(storage::lift_bans_of_own_keys(connection, relay_key, games, error) == 0u);
  CHECK(bans_in(games) == "1");
  CHECK(storage::lift_bans_of_own_keys(connection, relay_key, community, error) == 0u);
}

TEST_CASE_METHOD(membership_fixture, "the first key to use the database is the deployment's; another is refused,"
                 " naming both", "[integration][keys]") {
  storage::pg_connection fresh(database.conninfo());
  scalar(fresh, "DELETE FROM relay_identity RETURNING 1", {}); // whatever the fixture's set-up recorded
  CHECK_FALSE(storage::check_relay_identity(fresh, relay_key, "/etc/comb/relay.key"));
  CHECK_FALSE(storage::check_relay_identity(fresh, relay_key, "/etc/comb/relay.key")); // again: the same
  auto other = protocol::key_pair::generate();
  auto refused = storage::check_relay_identity(fresh, other, "/tmp/typo.key");
  REQUIRE(refused);
  CHECK(refused->find(protocol::to_hex(relay_key.public_key())) != std::string::npos);
  CHECK(refused->find(protocol::to_hex(other.public_key())) != std::string::npos);
  CHECK(refused->find("/tmp/typo.key") != std::string::npos);
  CHECK(scalar(fresh, "SELECT count(*) FROM relay_identity", {}) == "1");
}

TEST_CASE_METHOD(membership_fixture, "a database written before the record is claimed only by the key that signed its"
                 " lists", "[integration][keys]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  storage::pg_connection fresh(database.conninfo());
  scalar(fresh, "DELETE FROM relay_identity RETURNING 1", {}); // as migration 42 leaves an older database
  // A stray key (a dev ./var/relay.key, a pod that lost its file and made one) comes first.
  auto stray = protocol::key_pair::generate();
  auto refused = storage::check_relay_identity(fresh, stray, "./var/relay.key");
  REQUIRE(refused);
  CHECK(refused->find("signed by " + protocol::to_hex(protocol::derive_community_key(relay_key, "a.example").public_key()))
        != std::string::npos);
  CHECK(scalar(fresh, "SELECT count(*) FROM relay_identity", {}) == "0");
  CHECK_FALSE(storage::check_relay_identity(fresh, relay_key, "/var/lib/comb/relay.key"));
  CHECK(storage::check_relay_identity(fresh, stray, "./var/relay.key"));
  // Made the deployment's by hand, as the error says, the stray key is taken.
  scalar(fresh, "DELETE FROM relay_identity RETURNING 1", {});
  scalar(fresh, "INSERT INTO relay_identity (pubkey) VALUES ($1::bytea) RETURNING 1",
         {"\\x" + protocol::to_hex(stray.public_key())});
  CHECK_FALSE(storage::check_relay_identity(fresh, stray, "./var/relay.key"));
}
