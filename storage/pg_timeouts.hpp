// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace comb::storage {

/// Statements this process's connections saw fail by a timeout, for the metrics: waiting past
/// lock_timeout for a lock (55P03), running past statement_timeout (57014, which a cancel
/// request also raises; comb sends none).
struct pg_timeout_counts {
  std::atomic<std::uint64_t> lock{0};
  std::atomic<std::uint64_t> statement{0};
};
[[nodiscard]] pg_timeout_counts& pg_timeouts() noexcept;

/// Counts a failed statement's SQLSTATE when it is one of those timeouts (pg_connection reads
/// every reply through here).
void count_timeout(std::string_view sqlstate) noexcept;

} // namespace comb::storage
