// SPDX-License-Identifier: MIT
#include "storage/pg_timeouts.hpp"

namespace comb::storage {

pg_timeout_counts& pg_timeouts() noexcept {
  static pg_timeout_counts counts;
  return counts;
}

void count_timeout(std::string_view sqlstate) noexcept {
  if (sqlstate == "55P03")
    pg_timeouts().lock.fetch_add(1, std::memory_order_relaxed);
  else if (sqlstate == "57014")
    pg_timeouts().statement.fetch_add(1, std::memory_order_relaxed);
}

} // namespace comb::storage
