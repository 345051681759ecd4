// SPDX-License-Identifier: MIT
// The pure plan of a write batch (storage::plan_batch), where it needs no database.
#include <catch2/catch.hpp>

#include "protocol/hex.hpp"
#include "storage/store_plan.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using storage::event_key;

namespace {

constexpr std::int64_t community = 7;

/// A snapshot holding `stored` as the live version of its address.
storage::batch_snapshot holding(const protocol::event& stored) {
  storage::batch_snapshot snapshot;
  auto addr = storage::address_of_event(community, stored);
  REQUIRE(addr);
  const event_key key{community, stored.id};
  snapshot.events[key] = storage::stored_event{stored.pubkey, stored.kind, stored.created_at, addr};
  snapshot.current[*addr] = key;
  return snapshot;
}

storage::event_write write_of(const protocol::event& ev) {
  storage::event_write w;
  w.community_id = community;
  w.ev = std::make_shared<const protocol::event>(ev);
  w.json = std::make_shared<const std::string>("{}");
  w.recheck_access = false;
  return w;
}

} // namespace

// The key a replaced or address-deleted version is deleted by was read from the node of the
// snapshot's live versions that the plan had just erased: freed memory (an ASan build saw it).
// The ctest entry "unit: store plan, freed memory poisoned" runs these with glibc filling what
// it frees, so such a read gives a wrong key here.
TEST_CASE("a replaced version is planned for deletion by its own key", "[storage][store_plan]") {
  auto author = protocol::key_pair::generate();
  auto older = test::sign_event(author, 0, "older", {}, 1000);
  auto newer = test::sign_event(author, 0, "newer", {}, 2000);
  std::vector<storage::event_write> writes{write_of(newer)};
  auto plan = storage::plan_batch(writes, holding(older));
  REQUIRE(plan.outcomes.size() == 1);
  CHECK(plan.outcomes[0].result == storage::store_outcome::status::stored);
  CHECK(plan.outcomes[0].replaced);
  CHECK(plan.deletes == std::vector<event_key>{{community, older.id}});
}

TEST_CASE("a version its address's deletion covers is planned for deletion by its own key",
          "[storage][store_plan]") {
  auto author = protocol::key_pair::generate();
  auto article = test::sign_event(author, 30023, "draft", {{"d", "post"}}, 1000);
  auto deletion = test::sign_event(author, 5, "", {{"a", "30023:" + protocol::to_hex(author.public_key()) + ":post"}}, 2000);
  std::vector<storage::event_write> writes{write_of(deletion)};
  auto plan = storage::plan_batch(writes, holding(article));
  CHECK(plan.deletes == std::vector<event_key>{{community, article.id}});
}

// A comment only reads its root's live version: comments on one article share its lock, and
// only a batch that also writes the article takes it exclusively.
TEST_CASE("a comment's root by address is locked shared, exclusively when the batch writes it",
          "[storage][store_plan]") {
  auto author = protocol::key_pair::generate();
  auto article = test::sign_event(author, 30023, "", {{"d", "plan"}}, 1000);
  const std::string root = "30023:" + protocol::to_hex(author.public_key()) + ":plan";
  auto comment = test::sign_event(author, 1111, "", {{"A", root}, {"K", "30023"}}, 1001);
  auto root_address = storage::address_of_event(community, article);
  REQUIRE(root_address);
  const auto lock = storage::address_lock_key(*root_address);
  auto lock_of = [&](const std::vector<storage::event_write>& writes) {
    auto keys = storage::keys_of(writes);
    CHECK(keys.borrowing_addresses == std::vector{*root_address});
    for (const auto& l : storage::locks_for(keys))
      if (l.key == lock)
        return std::optional(l.exclusive);
    return std::optional<bool>();
  };
  CHECK(lock_of({write_of(comment)}) == std::optional(false));
  CHECK(lock_of({write_of(article), write_of(comment)}) == std::optional(true));
}
