// SPDX-License-Identifier: MIT
// NIP-43 roles and request memory against a real Postgres: 33534 role definitions written in
// the transaction of the first list naming them and served like stored events, the start-up
// rewrite of lists in comb's older shape (once, even when two pods start together), and
// membership requests that are never applied twice, on any connection.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "protocol/canonical_json.hpp"
#include "protocol/event_json.hpp"
#include "protocol/filter_json.hpp"
#include "storage/member_list.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::member_role;
using storage::membership_change;
using outcome = storage::membership_outcome;

namespace {

/// The community's 33534s as (d, created_at), oldest first.
std::vector<std::pair<std::string, std::int64_t>> definitions(membership_fixture& f) {
  storage::pg_connection reader(f.database.conninfo());
  auto reply = reader.exec("SELECT d_tag, created_at FROM events WHERE community_id = $1::bigint"
                           " AND kind = 33534 ORDER BY created_at, d_tag",
                           {std::to_string(f.community)});
  REQUIRE(reply.ok());
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (int row = 0; row < reply.rows(); ++row)
    out.emplace_back(std::string(reply.text(row, 0)), reply.integer(row, 1));
  return out;
}

/// What a REQ with this filter JSON gets from the event store.
std::vector<protocol::event> req(membership_fixture& f, const std::string& filter_json) {
  auto filter = protocol::filter_from_json(boost::json::parse(filter_json), {});
  REQUIRE(filter);
  auto result = f.events.query(f.community, {filter.value()}, now_seconds(), 100);
  REQUIRE(result.ok);
  std::vector<protocol::event> out;
  for (const auto& json : result.events) {
    auto ev = protocol::event_from_json(boost::json::parse(json), {});
    REQUIRE(ev);
    out.push_back(ev.value());
  }
  return out;
}

/// Replaces the live list with one in comb's older shape (`["member", hex, role name]`) and
/// forgets the role definitions, as a database written by an older comb has them.
protocol::event make_old_shape(membership_fixture& f) {
  auto stored = f.members.members(f.community);
  REQUIRE(stored);
  protocol::event old;
  old.kind = storage::member_list_kind;
  old.created_at = now_seconds() - 100;
  auto signer = f.signer(f.community);
  old.pubkey = signer.public_key();
  old.tags.push_back({"-"});
  for (const auto& m : *stored)
    old.tags.push_back({"member", protocol::to_hex(m.pubkey), std::string(storage::role_name(m.role))});
  old.id = protocol::compute_id(old);
  old.sig = signer.sign(old.id);
  storage::pg_connection writer(f.database.conninfo());
  const std::string community = std::to_string(f.community);
  REQUIRE(writer.exec("DELETE FROM events WHERE community_id = $1::bigint AND kind IN (13534, 33534)",
                      {community}).ok());
  REQUIRE(writer.exec("INSERT INTO events (community_id, id, pubkey, created_at, kind, d_tag, raw)"
                      " VALUES ($1::bigint, decode($2, 'hex'), decode($3, 'hex'), $4::bigint, 13534, '', $5)",
                      {community, protocol::to_hex(old.id), protocol::to_hex(old.pubkey),
                       std::to_string(old.created_at), protocol::render_event_json(old)}).ok());
  return old;
}

storage::membership_command request(membership_change change, const protocol::bytes32& who,
                                    std::uint8_t id_seed) {
  auto c = command(change, who);
  c.requested_by = who;
  c.request_id = key(id_seed);
  return c;
}

int processed_rows(membership_fixture& f) {
  return std::stoi(scalar(f.connection, "SELECT count(*) FROM processed_requests"));
}

/// The first second with no list in `community_id`: the fixture's paced writes may have run
/// ahead of the clock, and a list never reuses a second (the change would wait for the next).
std::int64_t free_second(membership_fixture& f, std::int64_t community_id) {
  std::int64_t newest = std::stoll(scalar(f.connection, "SELECT newest_list_at FROM communities WHERE id = $1::bigint",
                                  {std::to_string(community_id)}));
  return std::max<std::int64_t>(now_seconds(), newest + 1);
}

} // namespace

TEST_CASE_METHOD(membership_fixture, "role definitions are written with the first list naming them",
                 "[integration][membership][nip43]") {
  auto plain = apply(command(membership_change::add_member, key(2)));
  REQUIRE(plain.list);
  CHECK(plain.role_definitions.empty()); // a list of plain members names no role
  CHECK(definitions(*this).empty());

  auto boot = apply(command(membership_change::provision_owner, key(1), member_role::owner));
  REQUIRE(boot.list);
  REQUIRE(boot.role_definitions.size() == 1);
  CHECK(protocol::d_tag(boot.role_definitions[0].ev) == "owner");
  CHECK(boot.role_definitions[0].json == protocol::render_event_json(boot.role_definitions[0].ev));
  CHECK(definitions(*this) == std::vector<std::pair<std::string, std::int64_t>>{
                                {"owner", boot.list->created_at}});
  CHECK(boot.list->tags == std::vector<protocol::tag>{{"-"},
                                                      {"member", protocol::to_hex(key(2))},
                                                      {"member", protocol::to_hex(key(1)), "owner"}});

  auto more = apply(command(membership_change::add_member, key(3)));
  CHECK(more.role_definitions.empty());
  auto promoted = apply(command(membership_change::update_role, key(3), member_role::admin));
  REQUIRE(promoted.list);
  REQUIRE(promoted.role_definitions.size() == 1);
  CHECK(protocol::d_tag(promoted.role_definitions[0].ev) == "admin");
  CHECK(definitions(*this) == std::vector<std::pair<std::string, std::int64_t>>{
                                {"owner", boot.list->created_at}, {"admin", promoted.list->created_at}});
  // A definition stays while the community has it; demoting and promoting again writes none.
  CHECK(apply(command(membership_change::update_role, key(3))).role_definitions.empty());
  CHECK(apply(command(membership_change::update_role, key(3), member_role::admin)).role_definitions.empty());
  CHECK(definitions(*this).size() == 2);

  // Served to a REQ like any stored event, by kind and by d tag.
  auto all = req(*this, R"({"kinds":[33534]})");
  REQUIRE(all.size() == 2);
  for (const auto& ev : all) {
    CHECK(ev.pubkey == signer(community).public_key());
    CHECK(ev.tags[0] == protocol::tag{"-"});
  }
  auto admin = req(*this, R"({"kinds":[33534],"#d":["admin"]})");
  REQUIRE(admin.size() == 1);
  CHECK(*protocol::first_tag_value(admin[0], "label") == "Admin");
}

TEST_CASE_METHOD(membership_fixture, "a list written by an older comb is rewritten once at upgrade",
                 "[integration][membership][nip43]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  REQUIRE(apply(command(membership_change::add_member, key(2))).list);
  REQUIRE(apply(command(membership_change::add_member, key(3), member_role::admin)).list);
  auto current = live_lists(community);
  REQUIRE(current.size() == 1);
  // A list in the current shape with its definitions is left alone.
  auto untouched = members.upgrade_list(community, free_second(*this, community));
  REQUIRE(untouched.committed);
  CHECK_FALSE(untouched.list);
  CHECK(live_lists(community) == current);

  auto old = make_old_shape(*this);
  auto newest_before = std::stoll(scalar(connection, "SELECT newest_list_at FROM communities WHERE id = $1::bigint",
                                         {std::to_string(community)}));
  auto upgraded = members.upgrade_list(community, free_second(*this, community));
  REQUIRE(upgraded.committed);
  REQUIRE(upgraded.list);
  CHECK(upgraded.list->created_at >= now_seconds() - 5);
  CHECK(upgraded.list->created_at > newest_before); // the created_at rule of every list
  CHECK(upgraded.list->tags == std::vector<protocol::tag>{{"-"},
                                                          {"member", protocol::to_hex(key(1)), "owner"},
                                                          {"member", protocol::to_hex(key(2))},
                                                          {"member", protocol::to_hex(key(3)), "admin"}});
  CHECK(upgraded.role_definitions.size() == 2);
  auto lists = live_lists(community);
  REQUIRE(lists.size() == 1);
  CHECK(lists[0] == *upgraded.list);
  CHECK(lists[0].id != old.id);
  CHECK(members.verify(community).matches);
  CHECK(definitions(*this).size() == 2);

  auto again = members.upgrade_list(community, free_second(*this, community));
  REQUIRE(again.committed);
  CHECK_FALSE(again.list);
  CHECK(live_lists(community) == lists);

  // A community with no list at all has nothing to upgrade.
  auto empty = add_community("b.example");
  auto nothing = members.upgrade_list(empty, now_seconds());
  CHECK(nothing.committed);
  CHECK_FALSE(nothing.list);
  CHECK(live_lists(empty).empty());
}

TEST_CASE_METHOD(membership_fixture, "two pods upgrading at once rewrite the list once",
                 "[integration][membership][nip43][race]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  REQUIRE(apply(command(membership_change::add_member, key(2))).list);
  make_old_shape(*this);
  auto at = free_second(*this, community);
  std::atomic<int> rewrites{0}, committed{0};
  REQUIRE(two_pods_behind_the_lock(*this, [&](storage::pg_connection& own) {
    storage::membership_store store(own, relay_key);
    auto write = store.upgrade_list(community, at);
    committed += write.committed;
    rewrites += write.list.has_value();
  }));
  CHECK(committed == 2);
  CHECK(rewrites == 1);
  CHECK(live_lists(community).size() == 1);
  CHECK(definitions(*this).size() == 1);
  CHECK(members.verify(community).matches);
}

TEST_CASE_METHOD(membership_fixture, "a processed request changes nothing when it comes again",
                 "[integration][membership][nip43]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  auto join = request(membership_change::claim_membership, key(2), 100);
  auto joined = apply(join);
  CHECK(joined.results[0].outcome == outcome::changed);
  auto leave = request(membership_change::remove_member, key(2), 101);
  CHECK(apply(leave).results[0].outcome == outcome::changed);
  auto lists = live_lists(community);

  // The same join again, through another connection (another pod): nothing changes.
  storage::pg_connection other(database.conninfo());
  storage::membership_store pod_b(other, relay_key);
  auto replayed = pod_b.apply(community, std::span(&join, 1), free_second(*this, community));
  REQUIRE(replayed.committed);
  CHECK(replayed.results[0].outcome == outcome::already_processed);
  CHECK_FALSE(replayed.list);
  CHECK(live_lists(community) == lists);

  // Joined again by a new request; the old leave replayed does not remove them.
  CHECK(apply(request(membership_change::claim_membership, key(2), 102)).results[0].outcome
        == outcome::changed);
  auto replayed_leave = apply(leave);
  CHECK(replayed_leave.results[0].outcome == outcome::already_processed);
  CHECK_FALSE(replayed_leave.list);
  CHECK(stored_members(community).contains({protocol::to_hex(key(2)), "member"}));
  // A replayed join of a member still hears it is one.
  CHECK(apply(join).results[0].outcome == outcome::already_member);

  // The same id twice in one batch: applied once.
  std::vector<storage::membership_command> batch{request(membership_change::add_member, key(5), 103),
                                                 request(membership_change::add_member, key(5), 103)};
  batch[0].requested_by = batch[1].requested_by = key(1);
  auto both = members.apply(community, batch, free_second(*this, community));
  CHECK(both.results[0].outcome == outcome::changed);
  CHECK(both.results[1].outcome == outcome::already_processed);

  // Each distinct request is remembered once, with what it came to.
  CHECK(processed_rows(*this) == 4);
  CHECK(scalar(connection, "SELECT outcome FROM processed_requests WHERE event_id = $1::bytea",
               {storage::bytea_param(key(100))}) == "changed");

  // A refused request, repeated on another pod, is refused alike and still changes nothing.
  auto not_theirs = request(membership_change::remove_member, key(5), 104);
  not_theirs.requested_by = key(2); // a plain member may not remove others
  CHECK(apply(not_theirs).results[0].outcome == outcome::not_allowed);
  CHECK(pod_b.apply(community, std::span(&not_theirs, 1), free_second(*this, community)).results[0].outcome
        == outcome::not_allowed);
  CHECK(stored_members(community).contains({protocol::to_hex(key(5)), "member"}));
}

TEST_CASE_METHOD(membership_fixture, "processed requests are forgotten after the request window",
                 "[integration][membership][nip43]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  auto now = free_second(*this, community);
  auto join = request(membership_change::claim_membership, key(2), 110);
  CHECK(members.apply(community, std::span(&join, 1), now).results[0].outcome == outcome::changed);
  CHECK(scalar(connection, "SELECT expires_at FROM processed_requests")
        == std::to_string(now + 2 * storage::request_window_seconds));
  // Within the window the id is remembered; once past it, the next request purges it (the
  // request itself would by then be refused by its created_at).
  auto later = request(membership_change::claim_membership, key(3), 111);
  auto past = now + 2 * storage::request_window_seconds + 1;
  CHECK(members.apply(community, std::span(&later, 1), past).results[0].outcome == outcome::changed);
  CHECK(scalar(connection, "SELECT string_agg(encode(event_id, 'hex'), ',') FROM processed_requests")
        == protocol::to_hex(key(111)));

  // The periodic sweep forgets every community's expired ids, and only those.
  auto other = add_community("b.example");
  auto there = request(membership_change::claim_membership, key(4), 112);
  REQUIRE(members.apply(other, std::span(&there, 1), now).committed);
  CHECK(storage::forget_processed_requests(connection, past + 1) == 1); // b's, expired by then
  CHECK(processed_rows(*this) == 1);
  CHECK(storage::forget_processed_requests(connection, past + 2 * storage::request_window_seconds + 1) == 1);
  CHECK(processed_rows(*this) == 0);
}

TEST_CASE_METHOD(membership_fixture, "one request racing through two pods is applied once",
                 "[integration][membership][nip43][race]") {
  REQUIRE(apply(command(membership_change::provision_owner, key(1), member_role::owner)).list);
  auto join = request(membership_change::claim_membership, key(2), 120);
  auto at = free_second(*this, community);
  std::atomic<int> changed{0}, processed{0};
  REQUIRE(two_pods_behind_the_lock(*this, [&](storage::pg_connection& own) {
    storage::membership_store store(own, relay_key);
    auto write = store.apply(community, std::span(&join, 1), at);
    changed += write.results.at(0).outcome == outcome::changed;
    processed += write.results.at(0).outcome == outcome::already_member;
  }));
  CHECK(changed == 1);
  CHECK(processed == 1); // the replay of a join whose author is now a member says so
  CHECK(live_lists(community).size() == 1);
}
