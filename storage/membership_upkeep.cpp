// SPDX-License-Identifier: MIT
// membership_store's upkeep of the list: the start-up upgrade to the current NIP-43 shape and
// the operator's check that the live list says what the members table says.
#include <set>
#include <utility>

#include "storage/member_list.hpp"
#include "storage/membership_steps.hpp"
#include "storage/membership_store.hpp"
#include "storage/nip43_rows.hpp"

namespace comb::storage {

using namespace membership_steps;

bool membership_store::live_list_outdated(std::int64_t community_id) {
  auto live = read_live_list(connection_, community_id, key_of(community_id).public_key());
  if (live.rows() == 0)
    return false;
  auto list = parse_stored_list(live.text(0, 0));
  return list
         && !list_in_current_shape(*list, read_role_ids(connection_, community_id,
                                                        key_of(community_id).public_key()));
}

membership_write membership_store::upgrade_list(std::int64_t community_id, std::int64_t now) {
  last_error_.clear();
  membership_command republish;
  republish.change = membership_change::republish;
  republish.added_by = "upgrade";
  try {
    must(connection_.exec("BEGIN"), "begin");
    must(connection_.exec("SELECT 1 FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE",
                          {std::to_string(community_id)}),
         "lock community");
    membership_write out;
    if (live_list_outdated(community_id))
      out = apply_locked(community_id, std::span(&republish, 1), now);
    else {
      out.committed = true;
      out.results.push_back(membership_result::of(membership_outcome::nothing_to_do));
    }
    must(connection_.exec("COMMIT"), "commit");
    keep_snapshot();
    return out;
  } catch (const list_must_wait& wait) {
    return must_wait(1, wait.until);
  } catch (const std::exception& e) {
    (void)connection_.exec("ROLLBACK");
    drop_snapshot(community_id);
    last_error_ = e.what();
    return failed_write(1, last_error_);
  }
}

list_check membership_store::verify(std::int64_t community_id) {
  last_error_.clear();
  try {
    // One snapshot for both: a change committed between two reads made a community whose list
    // agrees with its members look as if it did not (and `republish-members` then ran for it).
    must(connection_.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"), "begin");
    auto stored = read_members(connection_, community_id);
    auto live = read_live_list(connection_, community_id, key_of(community_id).public_key());
    must(connection_.exec("COMMIT"), "commit");
    if (live.rows() == 0)
      return {stored.empty(), stored.empty() ? "no members, no list" : "no live list"};
    auto list = parse_stored_list(live.text(0, 0));
    auto listed = list ? members_of_list(*list) : std::nullopt;
    if (!listed)
      return {false, "the live list cannot be read"};
    std::set<std::pair<protocol::bytes32, member_role>> a, b;
    for (const auto& m : stored)
      a.insert({m.pubkey, m.role});
    for (const auto& m : *listed)
      b.insert({m.pubkey, m.role});
    if (a == b)
      return {true, std::to_string(a.size()) + " members"};
    std::size_t missing = 0, extra = 0;
    for (const auto& entry : a)
      missing += !b.contains(entry);
    for (const auto& entry : b)
      extra += !a.contains(entry);
    return {false, std::to_string(missing) + " stored members (or roles) missing from the live list, "
                     + std::to_string(extra) + " list entries not among the members"};
  } catch (const std::exception& e) {
    (void)connection_.exec("ROLLBACK");
    last_error_ = e.what();
    return {false, "database error: " + last_error_};
  }
}

} // namespace comb::storage
