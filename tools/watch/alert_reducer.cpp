// SPDX-License-Identifier: MIT
#include "tools/watch/alert_reducer.hpp"

#include <algorithm>

namespace comb::watch {

alert_reducer::alert_reducer(pubkey_hex viewer, ledger initial, ledger_saver save,
                             reducer_rules rules)
  : viewer_(std::move(viewer)),
    ledger_(std::move(initial)),
    save_(std::move(save)),
    rules_(rules),
    batcher_(rules.batching) {}

list_verdict alert_reducer::on_list(const membership_list& list, instant now) {
  // The latch comes first: once revoked, no list may even touch the ledger.
  if (revoked_)
    return list_verdict::latched;
  // Strictly older only: the relay may publish two lists in one second, and the second must
  // still be read so that a revoking one wins whichever arrives first.
  if (newest_created_at_ && list.created_at < *newest_created_at_)
    return list_verdict::stale;
  // Authorization is read from the list being processed, before it can disclose its joins.
  if (!names_as_manager(list, viewer_)) {
    latch_revocation();
    return list_verdict::revoked;
  }
  return record(list, now);
}

void alert_reducer::latch_revocation() {
  revoked_ = true;
  // Joins still waiting for their quiet window were learnt while authorized, but the viewer is
  // no longer entitled to hear of them: under-notify rather than disclose.
  batcher_.discard();
}

list_verdict alert_reducer::record(const membership_list& list, instant now) {
  auto roster = roster_of(list);
  bool seeding = !ledger_.seeded();
  auto joined = seeding ? std::vector<pubkey_hex>{} : ledger_.unseen(roster);
  if (!seeding && joined.empty()) {
    newest_created_at_ = list.created_at;
    return list_verdict::nothing_new;
  }
  auto next = ledger_.after(roster, rules_.departed_cap);
  // Persist before alerting: a failure leaves ledger and fence as they were, so the next list
  // (or the same one again) finds the same joins and retries.
  if (!save_(next))
    return list_verdict::write_failed;
  ledger_ = std::move(next);
  newest_created_at_ = list.created_at;
  if (seeding)
    return list_verdict::seeded;
  std::erase(joined, viewer_);
  batcher_.add(joined, now);
  return list_verdict::recorded;
}

} // namespace comb::watch
