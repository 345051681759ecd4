// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "tools/watch/alert_batcher.hpp"
#include "tools/watch/ledger.hpp"
#include "tools/watch/membership_list.hpp"

namespace comb::watch {

/// Persists a ledger before any alert it implies fires; false when it could not.
using ledger_saver = std::function<bool(const ledger&)>;

/// What became of one list.
enum class list_verdict {
  stale,         ///< older than the newest list processed: ignored
  latched,       ///< revocation already latched: ignored, nothing recorded
  revoked,       ///< this list does not name the viewer as owner or admin: latched from now on
  seeded,        ///< the first list of the community, recorded silently
  nothing_new,   ///< every member already known
  recorded,      ///< new members recorded; their alerts are pending
  write_failed,  ///< the ledger could not be saved: nothing changed, the next list retries
};

struct reducer_rules {
  batching_rules batching;
  std::size_t departed_cap = default_departed_cap;
};

/// The pure core of comb-watch for one community and one viewer: lists in, alerts out, time
/// injected. Owns the in-memory ledger, the created_at fence and the revocation latch.
class alert_reducer {
public:
  alert_reducer(pubkey_hex viewer, ledger initial, ledger_saver save, reducer_rules rules = {});

  list_verdict on_list(const membership_list& list, instant now);

  [[nodiscard]] std::optional<instant> next_flush() const { return batcher_.due(); }

  [[nodiscard]] std::vector<alert> take_due(instant now) { return batcher_.take_due(now); }

  [[nodiscard]] std::vector<alert> take_all() { return batcher_.take_all(); }

  [[nodiscard]] bool revoked() const noexcept { return revoked_; }

  [[nodiscard]] const ledger& recorded() const noexcept { return ledger_; }

private:
  void latch_revocation();
  list_verdict record(const membership_list& list, instant now);

  pubkey_hex viewer_;
  ledger ledger_;
  ledger_saver save_;
  reducer_rules rules_;
  alert_batcher batcher_;
  std::optional<std::int64_t> newest_created_at_;
  bool revoked_ = false;
};

} // namespace comb::watch
