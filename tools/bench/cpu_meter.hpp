// SPDX-License-Identifier: MIT
#pragma once
// CPU accounting around a timed phase, for any relay: user + system time of the relay process,
// of its database processes (comb's Postgres; none for strfry) and of comb-bench itself, so a
// rate comes with what it cost and the generator is seen when it is the ceiling.

#include <string>
#include <vector>

#include "tools/bench/bench_support.hpp"

namespace comb::bench {

/// User + system CPU seconds of process `pid` (all its threads) from /proc/PID/stat; -1 when
/// the process is gone or unreadable.
[[nodiscard]] double process_cpu_seconds(int pid);

/// Takes a reading when made; `add_to` adds the CPU spent since, in total and per operation.
class cpu_meter {
public:
  explicit cpu_meter(const options& opts);

  /// Adds `<prefix>relay_cpu_s`, `<prefix>relay_cpu_us_per_<op>` (with --relay-pid), the same
  /// for `db` (with --db-pids) and `<prefix>bench_cpu_s` / `_us_per_<op>` for comb-bench.
  void add_to(report& out, const std::string& prefix, double operations,
              const std::string& op) const;

private:
  [[nodiscard]] double db_seconds() const;

  int relay_pid_;
  std::vector<int> db_pids_;
  double relay_start_;
  double db_start_;
  double self_start_;
};

} // namespace comb::bench
