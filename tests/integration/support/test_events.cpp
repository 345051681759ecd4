// SPDX-License-Identifier: MIT
#include "support/test_events.hpp"

#include <catch2/catch.hpp>

#include "protocol/canonical_json.hpp"

namespace comb::test {
namespace {

protocol::key_pair key_from_seed(std::uint8_t seed) {
  protocol::bytes32 secret{};
  secret.fill(seed);
  auto keys = protocol::key_pair::from_secret(secret);
  REQUIRE(keys);
  return *keys;
}

} // namespace

author::author(std::uint8_t seed) : keys_(key_from_seed(seed)) {}

event_ptr author::sign(std::uint32_t kind,
                       std::int64_t created_at,
                       std::vector<protocol::tag> tags,
                       std::string content) const {
  auto ev = std::make_shared<protocol::event>();
  ev->pubkey = keys_.public_key();
  ev->created_at = created_at;
  ev->kind = kind;
  ev->tags = std::move(tags);
  ev->content = std::move(content);
  ev->id = protocol::compute_id(*ev);
  ev->sig = keys_.sign(ev->id);
  return ev;
}

std::string author::pubkey_hex() const {
  return protocol::to_hex(keys_.public_key());
}

storage::event_write write_of(std::int64_t community, const event_ptr& ev) {
  return storage::event_write{community, ev,
                              std::make_shared<const std::string>(protocol::render_event_json(*ev)), {}, true, {}};
}

void check_outcome(const storage::store_outcome& outcome, storage::store_outcome::status expected,
                   const std::string& message) {
  INFO(outcome.message);
  CHECK(outcome.result == expected);
  CHECK(outcome.message == message);
}

storage::store_outcome store_one(storage::event_store& store,
                                 std::int64_t community,
                                 const event_ptr& ev) {
  std::vector<storage::event_write> writes{write_of(community, ev)};
  auto outcomes = store.store_batch(writes);
  REQUIRE(outcomes.size() == 1);
  return outcomes.front();
}

std::string json_of(const event_ptr& ev) {
  return protocol::render_event_json(*ev);
}

std::vector<std::string> jsons_of(const std::vector<event_ptr>& events) {
  std::vector<std::string> out;
  for (const auto& ev : events)
    out.push_back(json_of(ev));
  return out;
}

std::string hex(const protocol::bytes32& value) {
  return protocol::to_hex(value);
}

std::pair<event_ptr, event_ptr> same_second_pair(const author& who,
                                                 std::uint32_t kind,
                                                 std::int64_t created_at,
                                                 std::vector<protocol::tag> tags) {
  event_ptr first = who.sign(kind, created_at, tags, "one");
  event_ptr second = who.sign(kind, created_at, tags, "two");
  if (second->id < first->id)
    std::swap(first, second);
  return {first, second};
}

protocol::bytes32 key(std::uint8_t seed) {
  return author(seed).pubkey();
}

} // namespace comb::test
