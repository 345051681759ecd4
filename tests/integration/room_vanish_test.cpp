// SPDX-License-Identifier: MIT
// NIP-62 and NIP-09 against room requests, which are stored outside the event batches: what their
// author took back never comes back through a room either, whichever transaction commits first.
#include <catch2/catch.hpp>
#include <thread>

#include "protocol/hex.hpp"
#include "storage/event_rows.hpp"
#include "storage/store_plan.hpp"
#include "support/room_fixture.hpp"

using namespace comb;
using namespace comb::test;
using protocol::room_outcome;
using status = storage::store_outcome::status;

namespace {

struct vanish_fixture : room_fixture {
  vanish_fixture() {
    open_room();
    REQUIRE(store_one(events, community, alice.sign(1, now - 100, {}, "kept until she vanishes")).result
            == status::stored);
  }

  storage::store_outcome vanish(const author& who, std::int64_t at) {
    return store_one(events, community, who.sign(62, at, {{"relay", "ALL_RELAYS"}}, "please forget me"));
  }

  /// Applies `request` while another session, standing for an event batch, holds the
  /// community's event lock exclusively and has run `batch_sql`; that session commits once the
  /// request waits for it (required).
  storage::room_write apply_behind_batch(const storage::room_command& request, const std::string& batch_sql,
                                         const storage::pg_params& params) {
    storage::pg_connection batch(database.conninfo());
    REQUIRE(batch.exec("BEGIN").ok());
    REQUIRE(batch.exec("SELECT pg_advisory_xact_lock($1::bigint)",
                       {std::to_string(storage::community_lock_key(community))})
              .ok());
    REQUIRE(batch.exec(batch_sql, params).ok());
    REQUIRE_FALSE(connection.ensure_connected());
    storage::room_write applied;
    std::thread applying([&] { applied = paced_room(rooms, community, request, now); });
    storage::pg_connection observer(database.conninfo());
    const bool waited = blocked_on_lock(observer, connection.backend_pid());
    const bool committed = batch.exec("COMMIT").ok();
    applying.join();
    CHECK(committed);
    CHECK(waited);
    return applied;
  }

  std::string stored_requests(std::uint32_t kind) {
    storage::pg_connection reader(database.conninfo());
    return scalar(reader, "SELECT count(*) FROM events WHERE community_id = $1::bigint AND kind = $2::int",
                  {std::to_string(community), std::to_string(kind)});
  }
};

} // namespace

TEST_CASE_METHOD(vanish_fixture, "a room request signed before its author vanished is refused ever after",
                 "[integration][rooms][nip62]") {
  auto before = room_command(alice, 9021, {{"h", "pizza"}}, now - 5);
  check_outcome(vanish(alice, now - 1), status::applied, "");
  CHECK(paced_room(rooms, community, before, now).outcome == room_outcome::vanished);
  CHECK(stored_requests(9021) == "0");
  CHECK(listed_members() == std::vector<std::string>{owner.pubkey_hex()});
  // What she signs after the line is hers again.
  CHECK(paced_room(rooms, community, room_command(alice, 9021, {{"h", "pizza"}}, now), now).outcome
        == room_outcome::changed);
}

TEST_CASE_METHOD(vanish_fixture, "a room request waits for a request to vanish in flight, then is refused",
                 "[integration][rooms][nip62][race]") {
  // The vanish's batch holds the community's event lock exclusively from before its snapshot to
  // its commit; a room request applied meanwhile would commit a 9021 it never saw to delete.
  auto join = room_command(alice, 9021, {{"h", "pizza"}}, now - 5);
  auto applied = apply_behind_batch(join, "INSERT INTO vanished (community_id, pubkey, until, request_id)"
                                          " VALUES ($1::bigint, decode($2, 'hex'), $3::bigint,"
                                          " decode(repeat('00', 32), 'hex'))",
                                    {std::to_string(community), alice.pubkey_hex(), std::to_string(now - 1)});
  CHECK(applied.outcome == room_outcome::vanished);
  CHECK(stored_requests(9021) == "0");
}

TEST_CASE_METHOD(vanish_fixture, "a room request waits for its own deletion in flight, then is refused",
                 "[integration][rooms][race]") {
  // A kind 5 by its author naming a 9021 still queued is stored by a batch that holds the event
  // lock exclusively and records a tombstone; the request applied after must read it.
  auto join = room_command(alice, 9021, {{"h", "pizza"}}, now);
  auto applied = apply_behind_batch(join, "INSERT INTO deleted_events (community_id, event_id, pubkey)"
                                          " VALUES ($1::bigint, decode($2, 'hex'), decode($3, 'hex'))",
                                    {std::to_string(community), protocol::to_hex(join.ev.id), alice.pubkey_hex()});
  CHECK(applied.outcome == room_outcome::deleted);
  CHECK(stored_requests(9021) == "0");
}
