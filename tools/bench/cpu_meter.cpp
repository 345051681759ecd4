// SPDX-License-Identifier: MIT
#include "tools/bench/cpu_meter.hpp"

#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

namespace comb::bench {

double process_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: fields are counted after the
  // last ')'. There, field 3 (state) is the first; utime and stime are fields 14 and 15.
  auto close = stat.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int n = 3; n <= 15 && (fields >> field); ++n) {
    if (n == 14)
      utime = std::stoull(field);
    if (n == 15)
      stime = std::stoull(field);
  }
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(utime + stime) / ticks;
}

cpu_meter::cpu_meter(const options& opts)
    : relay_pid_(opts.relay_pid), db_pids_(opts.db_pids),
      relay_start_(relay_pid_ ? process_cpu_seconds(relay_pid_) : 0), db_start_(db_seconds()),
      self_start_(cpu_seconds()) {}

double cpu_meter::db_seconds() const {
  double total = 0;
  for (int pid : db_pids_)
    if (double s = process_cpu_seconds(pid); s > 0)
      total += s;
  return total;
}

void cpu_meter::add_to(report& out, const std::string& prefix, double operations,
                      const std::string& op) const {
  auto per_op = [&](const std::string& who, double seconds) {
    out.figure(prefix + who + "_cpu_s", seconds, "s CPU while timed");
    if (operations > 0)
      out.figure(prefix + who + "_cpu_us_per_" + op, seconds * 1e6 / operations, "us");
  };
  if (relay_pid_)
    per_op("relay", process_cpu_seconds(relay_pid_) - relay_start_);
  if (!db_pids_.empty())
    per_op("db", db_seconds() - db_start_);
  per_op("bench", cpu_seconds() - self_start_);
}

} // namespace comb::bench
