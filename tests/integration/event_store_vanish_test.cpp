// SPDX-License-Identifier: MIT
// NIP-62 requests to vanish in the store: what goes, what stays, what is refused after, and
// the batches already writing in the community.
#include <catch2/catch.hpp>
#include <thread>

#include "protocol/hex.hpp"
#include "storage/event_rows.hpp"
#include "storage/store_plan.hpp"
#include "storage/vanish_reach.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::check_outcome;
using comb::test::jsons_of;
using comb::test::store_one;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

std::vector<std::string> everything(test::store_fixture& f) {
  auto result = f.events.query(f.community, {protocol::filter{}}, now, 100);
  REQUIRE(result.ok);
  return result.events;
}

test::event_ptr vanish_of(const author& who, std::int64_t at) {
  return who.sign(62, at, {{"relay", "ALL_RELAYS"}}, "please forget me");
}

test::event_ptr wrap_for(const author& wrapper, const author& addressee, std::int64_t at) {
  return wrapper.sign(1059, at, {{"p", addressee.pubkey_hex()}}, "sealed");
}

std::string vanished_until(test::store_fixture& f, const author& who) {
  return test::scalar(f.connection, "SELECT until FROM vanished WHERE community_id = $1::bigint"
                                    " AND pubkey = decode($2, 'hex')",
                      {std::to_string(f.community), who.pubkey_hex()});
}

} // namespace

TEST_CASE_METHOD(test::store_fixture, "a request to vanish deletes its author's events up to it, and refuses them after",
                 "[integration][event_store][nip62]") {
  author alice{21}, bob{22}, wrapper{23};
  auto note = alice.sign(1, now - 50, {{"t", "hello"}});
  auto profile = alice.sign(0, now - 40);
  auto taken_back = alice.sign(1, now - 39);
  auto deletion = alice.sign(5, now - 35, {{"e", protocol::to_hex(taken_back->id)}});
  auto after = alice.sign(1, now - 5); // written later than the request says
  auto bobs = bob.sign(1, now - 45, {{"p", alice.pubkey_hex()}});
  auto wrap_to_alice = wrap_for(wrapper, alice, now - 30);
  auto wrap_to_bob = wrap_for(wrapper, bob, now - 29);
  for (const auto& ev : {note, profile, taken_back, deletion, after, bobs, wrap_to_alice, wrap_to_bob})
    REQUIRE(store_one(events, community, ev).result == status::stored);

  auto request = vanish_of(alice, now - 10);
  check_outcome(store_one(events, community, request), status::applied, "");
  CHECK(everything(*this) == jsons_of({after, wrap_to_bob, bobs}));
  // The request is not kept as an event; the deleted events' tags went with them.
  CHECK(test::scalar(connection, "SELECT count(*) FROM events WHERE kind = 62") == "0");
  CHECK(test::scalar(connection, "SELECT count(*) FROM event_tags WHERE name = 't'") == "0");
  CHECK(vanished_until(*this, alice) == std::to_string(now - 10));
  CHECK(test::scalar(connection, "SELECT request FROM vanished") == test::json_of(request)); // as signed, for an export
  // A wrap to her sent again (its author is a key used once: no line stops it) stays deleted.
  check_outcome(store_one(events, community, wrap_to_alice), status::refused, storage::msg_deleted_id);
  CHECK(everything(*this) == jsons_of({after, wrap_to_bob, bobs}));

  // Nothing up to the request comes back; what is newer is stored.
  check_outcome(store_one(events, community, note), status::refused, storage::msg_vanished);
  check_outcome(store_one(events, community, alice.sign(1, now - 10)), status::refused, storage::msg_vanished);
  check_outcome(store_one(events, community, alice.sign(1, now - 9)), status::stored, "");
  // An older request changes nothing; a newer one moves the line.
  check_outcome(store_one(events, community, vanish_of(alice, now - 20)), status::applied, "");
  CHECK(vanished_until(*this, alice) == std::to_string(now - 10));
  check_outcome(store_one(events, community, vanish_of(alice, now - 1)), status::applied, "");
  CHECK(vanished_until(*this, alice) == std::to_string(now - 1));
  CHECK(everything(*this) == jsons_of({wrap_to_bob, bobs}));

  // A request that takes nothing leaves no line (a fresh key per request would grow the table
  // without bound): nothing of its author was here to come back.
  author stranger{28};
  check_outcome(store_one(events, community, vanish_of(stranger, now - 10)), status::applied, "");
  CHECK(vanished_until(*this, stranger).empty());
  check_outcome(store_one(events, community, stranger.sign(1, now - 20)), status::stored, "");
}

TEST_CASE_METHOD(test::store_fixture, "in one batch, a request to vanish takes what its author wrote before it",
                 "[integration][event_store][nip62]") {
  author alice{24}, bob{25}, wrapper{26};
  auto before = alice.sign(1, now - 20);
  auto wrap = wrap_for(wrapper, alice, now - 19);
  auto request = vanish_of(alice, now - 10);
  auto older = alice.sign(1, now - 15);
  auto newer = alice.sign(1, now - 5);
  auto bobs = bob.sign(1, now - 18);
  std::vector<storage::event_write> writes;
  for (const auto& ev : {before, wrap, request, older, newer, bobs})
    writes.push_back(test::write_of(community, ev));
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 6);
  check_outcome(outcomes[2], status::applied, "");
  check_outcome(outcomes[3], status::refused, storage::msg_vanished);
  check_outcome(outcomes[4], status::stored, "");
  check_outcome(outcomes[5], status::stored, "");
  CHECK(everything(*this) == jsons_of({newer, bobs}));
  // The wrap to her, sent again, stays deleted, as one stored before the request would.
  check_outcome(store_one(events, community, wrap), status::refused, storage::msg_deleted_id);
}

TEST_CASE_METHOD(test::store_fixture, "a request to vanish waits for the batches writing in its community, then deletes what they stored",
                 "[integration][event_store][nip62]") {
  author alice{27};
  // A batch that has read its snapshot (no request yet) and is writing alice's event: it holds
  // the community's lock shared until it commits.
  storage::pg_connection batch(database.conninfo());
  REQUIRE(batch.exec("BEGIN").ok());
  REQUIRE(batch.exec("SELECT pg_advisory_xact_lock_shared($1::bigint)",
                     {std::to_string(storage::community_lock_key(community))}).ok());
  REQUIRE(batch.exec("INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
                     " VALUES ($1::bigint, '\\x0a', decode($2, 'hex'), $3::bigint, 1, '{}')",
                     {std::to_string(community), alice.pubkey_hex(), std::to_string(now - 30)}).ok());
  REQUIRE_FALSE(connection.ensure_connected());
  storage::store_outcome vanished;
  std::thread request([&] { vanished = store_one(events, community, vanish_of(alice, now - 10)); });
  storage::pg_connection observer(database.conninfo());
  bool blocked = test::blocked_on_lock(observer, connection.backend_pid());
  REQUIRE(batch.exec("COMMIT").ok());
  request.join();
  CHECK(blocked);
  check_outcome(vanished, status::applied, "");
  CHECK(test::scalar(observer, "SELECT count(*) FROM events WHERE pubkey = decode($1, 'hex')", {alice.pubkey_hex()})
        == "0");
}

namespace {

/// A client's request, as the connection hands it over: carried out in the other communities it
/// names too.
storage::store_outcome send_request(test::store_fixture& f, const test::event_ptr& request) {
  auto write = test::write_of(f.community, request);
  write.vanish_elsewhere = true;
  auto outcomes = f.events.store_batch(std::span(&write, 1));
  REQUIRE(outcomes.size() == 1);
  return outcomes.front();
}

std::string count_by(test::store_fixture& f, std::int64_t community, const author& who) {
  return test::scalar(f.connection, "SELECT count(*) FROM events WHERE community_id = $1::bigint"
                                    " AND pubkey = decode($2, 'hex')",
                      {std::to_string(community), who.pubkey_hex()});
}

std::string lines_of(test::store_fixture& f, const author& who) {
  return test::scalar(f.connection, "SELECT string_agg(c.host || '=' || v.until, ' ' ORDER BY c.host)"
                                    " FROM vanished v JOIN communities c ON c.id = v.community_id"
                                    " WHERE v.pubkey = decode($1, 'hex')",
                      {who.pubkey_hex()});
}

} // namespace

TEST_CASE_METHOD(test::store_fixture, "a request to vanish is carried out in every community of the deployment it names, or in all with ALL_RELAYS",
                 "[integration][event_store][nip62]") {
  author alice{31}, bob{32}, wrapper{33};
  const std::int64_t b = add_community("b.test"), c = add_community("c.test"), d = add_community("d.test");
  (void)add_community("e.test");
  (void)test::scalar(connection, "INSERT INTO community_hosts (host, community_id) VALUES ('c-alias.test', $1::bigint)",
                     {std::to_string(c)});
  for (std::int64_t where : {community, b, c, d})
    REQUIRE(store_one(events, where, alice.sign(1, now - 50)).result == status::stored);
  auto bobs = bob.sign(1, now - 49);
  auto wrap_to_alice = wrap_for(wrapper, alice, now - 48);
  REQUIRE(store_one(events, b, bobs).result == status::stored);
  REQUIRE(store_one(events, d, wrap_to_alice).result == status::stored);

  // Named by host or alias, as the NIP-42 relay tag is read; a host no community has names none.
  auto named = send_request(*this, alice.sign(62, now - 40, {{"relay", "wss://a.example"},
                                                             {"relay", "wss://C-Alias.test/"},
                                                             {"relay", "wss://nowhere.test"}}));
  check_outcome(named, status::applied, "");
  CHECK(named.vanished_elsewhere == 1);
  CHECK(count_by(*this, community, alice) == "0");
  CHECK(count_by(*this, c, alice) == "0");
  CHECK(count_by(*this, b, alice) == "1");
  CHECK(count_by(*this, d, alice) == "1");
  CHECK(lines_of(*this, alice) == "a.example=" + std::to_string(now - 40) + " c.test=" + std::to_string(now - 40));

  // Every community where alice has something, the gift wraps to her included; none where she
  // has nothing (e.test, and c.test, emptied already), and everyone else's stays.
  auto everywhere = send_request(*this, alice.sign(62, now - 30, {{"relay", "ALL_RELAYS"}}));
  check_outcome(everywhere, status::applied, "");
  CHECK(everywhere.vanished_elsewhere == 2);
  CHECK(count_by(*this, b, alice) == "0");
  CHECK(count_by(*this, d, alice) == "0");
  CHECK(test::scalar(connection, "SELECT count(*) FROM events WHERE kind = 1059") == "0");
  CHECK(count_by(*this, b, bob) == "1");
  // A line moves only where the request took something, as in the request's own community.
  const std::string until = std::to_string(now - 30), before = std::to_string(now - 40);
  CHECK(lines_of(*this, alice) == "a.example=" + before + " b.test=" + until + " c.test=" + before + " d.test=" + until);
  // Nothing up to the request comes back into the communities it reached.
  check_outcome(store_one(events, b, alice.sign(1, now - 35)), status::refused, storage::msg_vanished);
  check_outcome(store_one(events, d, alice.sign(1, now - 29)), status::stored, "");

  // An import restores one community: a request it carries is carried out there only.
  REQUIRE(store_one(events, b, bob.sign(1, now - 20)).result == status::stored);
  check_outcome(store_one(events, community, bob.sign(62, now - 10, {{"relay", "ALL_RELAYS"}})), status::applied, "");
  CHECK(count_by(*this, b, bob) == "2");
}

TEST_CASE_METHOD(test::store_fixture, "a request to vanish reaching more communities than one transaction holds reaches them all",
                 "[integration][event_store][nip62]") {
  author alice{34};
  const std::size_t many = 2 * storage::vanish_communities_per_transaction + 3;
  std::vector<std::int64_t> others;
  for (std::size_t i = 0; i < many; ++i) {
    others.push_back(add_community("c" + std::to_string(i) + ".test"));
    REQUIRE(store_one(events, others.back(), alice.sign(1, now - 50)).result == status::stored);
  }
  auto outcome = send_request(*this, alice.sign(62, now - 10, {{"relay", "ALL_RELAYS"}}));
  check_outcome(outcome, status::applied, "");
  CHECK(outcome.vanished_elsewhere == many);
  CHECK(test::scalar(connection, "SELECT count(*) FROM events") == "0");
  CHECK(test::scalar(connection, "SELECT count(*) FROM vanished") == std::to_string(many));
}

TEST_CASE_METHOD(test::store_fixture, "a request to vanish that cannot be carried out everywhere fails, and the rest of its batch is stored",
                 "[integration][event_store][nip62]") {
  author alice{35}, bob{36};
  const std::int64_t b = add_community("b.test");
  auto here = alice.sign(1, now - 50);
  REQUIRE(store_one(events, community, here).result == status::stored);
  REQUIRE(store_one(events, b, alice.sign(1, now - 50)).result == status::stored);
  // Deleting in b.test fails (as a lost connection or a full lock table would).
  (void)test::scalar(connection, "CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS"
                                 " $$ BEGIN RAISE EXCEPTION 'no deletes here'; END $$");
  (void)test::scalar(connection, "CREATE TRIGGER refuse_delete BEFORE DELETE ON events FOR EACH ROW"
                                 " WHEN (OLD.community_id = " + std::to_string(b) + ") EXECUTE FUNCTION refuse_delete()");
  auto request = alice.sign(62, now - 10, {{"relay", "ALL_RELAYS"}});
  auto bobs = bob.sign(1, now - 5);
  std::vector<storage::event_write> writes{test::write_of(community, request), test::write_of(community, bobs)};
  writes[0].vanish_elsewhere = true;
  auto outcomes = events.store_batch(writes);
  REQUIRE(outcomes.size() == 2);
  check_outcome(outcomes[0], status::failed, storage::msg_failed);
  check_outcome(outcomes[1], status::stored, "");
  CHECK(everything(*this) == jsons_of({bobs, here}));
  CHECK(lines_of(*this, alice).empty());

  // Sent again once it can be, it is carried out everywhere.
  (void)test::scalar(connection, "DROP TRIGGER refuse_delete ON events");
  check_outcome(send_request(*this, request), status::applied, "");
  CHECK(count_by(*this, community, alice) == "0");
  CHECK(count_by(*this, b, alice) == "0");
}
