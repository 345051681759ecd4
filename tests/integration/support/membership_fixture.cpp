// SPDX-License-Identifier: MIT
#include "support/membership_fixture.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "protocol/event_json.hpp"
#include "storage/community_keys.hpp"
#include "storage/member_list.hpp"

namespace comb::test {

membership_fixture::membership_fixture()
  : relay_key(protocol::key_pair::generate()), members(connection, relay_key) {}

namespace {

/// Holds the community row lock on its own connection until released, so writers started
/// meanwhile queue behind it and then run back to back: the race, made to happen.
struct community_lock_holder {
  explicit community_lock_holder(membership_fixture& f) : holder(f.database.conninfo()) {
    REQUIRE(holder.exec("BEGIN").ok());
    REQUIRE(holder.exec("SELECT 1 FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE",
                        {std::to_string(f.community)}).ok());
  }
  void release() { REQUIRE(holder.exec("COMMIT").ok()); }
  storage::pg_connection holder;
};

/// Waits (bounded) until `count` backends wait on a lock.
bool lock_waiters(storage::pg_connection& observer, int count) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (scalar(observer, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                         " AND datname = current_database()") == std::to_string(count))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

} // namespace

bool two_pods_behind_the_lock(membership_fixture& f,
                              const std::function<void(storage::pg_connection&)>& pod) {
  community_lock_holder lock(f);
  std::vector<std::thread> pods;
  for (int i = 0; i < 2; ++i)
    pods.emplace_back([&] {
      storage::pg_connection own(f.database.conninfo());
      pod(own);
    });
  storage::pg_connection observer(f.database.conninfo());
  bool both_waiting = lock_waiters(observer, 2);
  lock.release();
  for (auto& running : pods)
    running.join();
  return both_waiting;
}

protocol::key_pair membership_fixture::signer(std::int64_t community_id) const {
  storage::pg_connection reader(database.conninfo());
  return storage::read_community_key(reader, relay_key, community_id);
}

storage::membership_write membership_fixture::apply(storage::membership_command c) {
  return paced(members, community, std::span(&c, 1));
}

std::vector<protocol::event> membership_fixture::live_lists(std::int64_t community_id) {
  storage::pg_connection reader(database.conninfo());
  auto reply = reader.exec("SELECT raw FROM events WHERE community_id = $1::bigint AND kind = 13534",
                           {std::to_string(community_id)});
  REQUIRE(reply.ok());
  std::vector<protocol::event> lists;
  protocol::protocol_limits roomy;
  roomy.max_tags_per_event = 1000000;
  roomy.max_tag_elements_per_event = 4000000;
  for (int row = 0; row < reply.rows(); ++row) {
    auto ev = protocol::event_from_json(boost::json::parse(reply.text(row, 0)), roomy);
    REQUIRE(ev);
    lists.push_back(ev.value());
  }
  return lists;
}

std::set<std::pair<std::string, std::string>> membership_fixture::stored_members(std::int64_t id) {
  storage::pg_connection reader(database.conninfo());
  auto reply = reader.exec("SELECT encode(pubkey, 'hex'), role FROM members WHERE community_id = $1::bigint",
                           {std::to_string(id)});
  REQUIRE(reply.ok());
  std::set<std::pair<std::string, std::string>> out;
  for (int row = 0; row < reply.rows(); ++row)
    out.insert({std::string(reply.text(row, 0)), std::string(reply.text(row, 1))});
  return out;
}

std::set<std::pair<std::string, std::string>> listed(const protocol::event& list) {
  std::set<std::pair<std::string, std::string>> out;
  auto members = storage::members_of_list(list);
  REQUIRE(members);
  for (const auto& m : *members)
    out.insert({protocol::to_hex(m.pubkey), std::string(storage::role_name(m.role))});
  return out;
}

storage::membership_command command(storage::membership_change change,
                                    const protocol::bytes32& subject, storage::member_role role) {
  storage::membership_command c;
  c.change = change;
  c.subject = subject;
  c.role = role;
  return c;
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

std::int64_t skip_to_second(std::int64_t second) {
  return second;
}

storage::membership_write paced(storage::membership_store& store, std::int64_t community_id,
                                std::span<const storage::membership_command> commands) {
  return store.apply_paced(community_id, commands, now_seconds(), skip_to_second);
}

} // namespace comb::test
