// SPDX-License-Identifier: MIT
// Shared helpers of the comb-watch unit tests: readable keys, lists, an in-memory ledger store.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tools/watch/alert_reducer.hpp"

namespace comb::watch::testing {

/// A distinct, valid-looking hex key per number: "000...0<n>".
inline pubkey_hex key(int n) {
  char digits[65];
  std::snprintf(digits, sizeof digits, "%064x", n);
  return digits;
}

inline const pubkey_hex viewer = key(1);

/// A list at `created_at` naming the viewer with role id `viewer_role` ("" for a plain member)
/// and plain members `others`.
inline membership_list list_at(std::int64_t created_at, std::vector<int> others,
                               std::string viewer_role = "owner") {
  std::vector<std::string> roles;
  if (!viewer_role.empty())
    roles.push_back(viewer_role);
  membership_list list{created_at, {{viewer, roles}}};
  for (int n : others)
    list.members.push_back({key(n), {}});
  return list;
}

/// Time zero plus `ms` milliseconds.
inline instant at_ms(long ms) {
  return instant{} + std::chrono::milliseconds(ms);
}

/// Stands in for the ledger file: remembers the last saved ledger, fails on demand.
struct memory_store {
  std::optional<ledger> saved;
  bool failing = false;
  int writes = 0;

  ledger_saver saver() {
    return [this](const ledger& next) {
      if (failing)
        return false;
      ++writes;
      saved = next;
      return true;
    };
  }
};

inline std::vector<pubkey_hex> keys(std::vector<int> numbers) {
  std::vector<pubkey_hex> out;
  for (int n : numbers)
    out.push_back(key(n));
  return out;
}

} // namespace comb::watch::testing
