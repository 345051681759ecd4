// SPDX-License-Identifier: MIT
#pragma once

#include "actors/community/member_cache.hpp"
#include "protocol/event.hpp"
#include "protocol/room_rules.hpp"

namespace comb::actors {

/// Whether this pod withholds `ev`, bridged from another pod, because its member cache says the
/// author may not post it: an ephemeral event whose author is not a member of a closed
/// community, or may not write in a room it names (a `restricted` room: its members, the
/// community's owner and admins; a hidden room the same, protocol::room_write_allowed, as
/// connection::check_room_event admits). The origin admitted
/// it by its own cache; a stored event was checked again by the database in the transaction
/// that stored it, but an ephemeral event never meets the database, so a pod cut off from
/// Postgres (removals it never saw) would otherwise speak for a removed member on every pod.
/// The bridge holds an envelope until this pod has the origin's state version, so this cache is
/// never older than the one that admitted it. Bans are not asked here: every connection
/// withholds a banned author's events live (ban_list::withholds).
[[nodiscard]] inline bool withholds_bridged(const protocol::event& ev, const member_cache& members) {
  if (protocol::classify(ev.kind) != protocol::kind_class::ephemeral)
    return false;
  if (members.closed().value_or(false) && !members.is_member(ev.pubkey))
    return true;
  auto rooms = members.rooms();
  for (const auto& t : ev.tags) {
    // A room this pod does not hold (the general one, one deleted since) decides nothing here:
    // every reader's connection hides what a deleted room held.
    const bool names_room = t.size() >= 2 && t[0] == "h" && t[1] != protocol::general_room;
    const cached_room* room = names_room ? rooms->find(t[1]) : nullptr;
    if (room && !protocol::room_write_allowed(room->flags, ev.kind, standing_in(*room, &members, ev.pubkey)))
      return true;
  }
  return false;
}

} // namespace comb::actors
