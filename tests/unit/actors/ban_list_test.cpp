// SPDX-License-Identifier: MIT
// A pod's ban list taking reloads that were read before its own newer bans.
#include <catch2/catch.hpp>

#include "actors/community/ban_list.hpp"

using comb::actors::ban_list;
using comb::protocol::bytes32;

namespace {

bytes32 key(std::uint8_t who) {
  bytes32 k;
  k.fill(who);
  return k;
}

comb::storage::community_bans stored(std::initializer_list<std::uint8_t> pubkeys,
                                     std::initializer_list<std::uint8_t> events = {}) {
  comb::storage::community_bans bans;
  for (auto who : pubkeys)
    bans.pubkeys.push_back({key(who), ""});
  for (auto what : events)
    bans.events.push_back({key(what), ""});
  return bans;
}

} // namespace

TEST_CASE("a reload read before this pod's own ban brings the others' bans and keeps its own",
          "[unit][bans]") {
  ban_list bans;
  bans.replace(stored({}), 1);
  bans.set_pubkey(key(2), true, 3); // this pod's ban, committed at version 3
  bans.set_event(key(7), true, 4);  // this pod's event ban (NIP-86), at version 4
  bans.replace(stored({9}), 2);     // read at version 2: another pod banned 9
  CHECK(bans.is_banned_pubkey(key(9)));
  CHECK(bans.is_banned_pubkey(key(2)));
  CHECK(bans.is_banned_event(key(7)));
  CHECK(bans.own_changes_kept() == 2);

  bans.replace(stored({9, 2}, {7}), 4); // a reload as new as every own change drops them
  CHECK(bans.own_changes_kept() == 0);
  bans.replace(stored({9}), 5); // and what the database says from then on stands
  CHECK_FALSE(bans.is_banned_pubkey(key(2)));
  CHECK_FALSE(bans.is_banned_event(key(7)));
}

TEST_CASE("own changes of one version replay in the order they were applied", "[unit][bans]") {
  ban_list bans;
  // One membership batch bans 3 and then lifts it again (an admin's allowpubkey queued behind
  // the ban): both carry the batch's version.
  bans.set_pubkey(key(3), true, 6);
  bans.set_pubkey(key(3), false, 6);
  bans.replace(stored({}), 5);
  CHECK_FALSE(bans.is_banned_pubkey(key(3)));
  bans.replace(stored({3}), 5);
  CHECK_FALSE(bans.is_banned_pubkey(key(3)));
}

TEST_CASE("a confirmed own write leaves nothing to replay", "[unit][bans]") {
  ban_list bans;
  bans.set_pubkey(key(3), true, 6);
  bans.set_event(key(4), true, 7);
  bans.settled(6);
  CHECK(bans.own_changes_kept() == 1);
  CHECK(bans.is_banned_pubkey(key(3)));
}

TEST_CASE("another writer's unban read before this pod's ban of the same key keeps the ban",
          "[unit][bans]") {
  ban_list bans;
  bans.replace(stored({4}), 1);
  bans.set_pubkey(key(4), true, 3); // already banned: nothing to do, still recorded at 3
  bans.replace(stored({}), 2);      // another pod lifted it at 2, before this pod's ban
  CHECK(bans.is_banned_pubkey(key(4)));
}

TEST_CASE("after a rewind own changes are not replayed, and unknown versions never are",
          "[unit][bans]") {
  ban_list bans;
  bans.set_pubkey(key(5), true, 9);
  bans.set_pubkey(key(6), true, 0);
  CHECK(bans.own_changes_kept() == 1);
  bans.forget_own_changes();
  bans.replace(stored({}), 3); // the restored database never had either ban
  CHECK_FALSE(bans.is_banned_pubkey(key(5)));
  CHECK_FALSE(bans.is_banned_pubkey(key(6)));
}

TEST_CASE("an own change heard after a reload as new as it is already in that reload",
          "[unit][bans]") {
  ban_list bans;
  // This pod lifted 8's ban at version 5, another pod banned 8 again at 6, and the watcher's
  // reload of 6 arrived before this pod's writer reported its commit of 5.
  bans.replace(stored({8}, {1}), 6);
  bans.set_pubkey(key(8), false, 5);
  bans.set_event(key(1), false, 6);
  CHECK(bans.is_banned_pubkey(key(8)));
  CHECK(bans.is_banned_event(key(1)));
  CHECK(bans.own_changes_kept() == 0);
  bans.set_pubkey(key(8), false, 7); // a newer one still counts
  CHECK_FALSE(bans.is_banned_pubkey(key(8)));
}
