// SPDX-License-Identifier: MIT
#include "support/membership_fixture.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>

#include "protocol/event_json.hpp"
#include "storage/member_list.hpp"

namespace comb::test {

membership_fixture::membership_fixture()
  : relay_key(protocol::key_pair::generate()), members(connection, relay_key) {}

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
