// SPDX-License-Identifier: MIT
#pragma once

#include "actors/community/member_cache.hpp"
#include "protocol/event.hpp"

namespace comb::actors {

/// Whether this pod withholds `ev`, bridged from another pod, because its member cache says the
/// author may not post in the community: an ephemeral event whose author is not a member of a
/// closed community. The origin admitted it by its own cache; a stored event was checked again
/// by the database in the transaction that stored it, but an ephemeral event never meets the
/// database, so a pod cut off from Postgres (removals it never saw) would otherwise speak for a
/// removed member on every pod. The bridge holds an envelope until this pod has the origin's
/// state version, so this cache is never older than the one that admitted it. Bans are not
/// asked here: every connection withholds a banned author's events live (ban_list::withholds).
[[nodiscard]] inline bool withholds_bridged(const protocol::event& ev, const member_cache& members) {
  return protocol::classify(ev.kind) == protocol::kind_class::ephemeral && members.closed().value_or(false)
         && !members.is_member(ev.pubkey);
}

} // namespace comb::actors
