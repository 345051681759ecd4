// SPDX-License-Identifier: MIT
// NIP-62 requests to vanish in the store: what goes, what stays, what is refused after, and
// the batches already writing in the community.
#include <catch2/catch.hpp>
#include <thread>

#include "protocol/hex.hpp"
#include "storage/event_rows.hpp"
#include "storage/store_plan.hpp"
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
