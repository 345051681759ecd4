// SPDX-License-Identifier: MIT
#pragma once
// The comb-bench scenarios. Each returns the process exit code and ends with its report.

#include "tools/bench/bench_support.hpp"

namespace comb::bench {

int run_ingest(const options& opts, report& out);
int run_fanout(const options& opts, report& out);
int run_query(const options& opts, report& out);
int run_connections(const options& opts, report& out);
int run_membership(const options& opts, report& out);

/// Opens `clients` and runs the loop until each is open and, when the relay challenged it,
/// authenticated (or `max_seconds` pass). False when some did not make it.
bool await_ready(event_loop& loop, const std::vector<std::shared_ptr<client>>& clients,
                 double max_seconds);

/// A short random hex tag that keeps one run's events apart from earlier runs'.
std::string run_tag();

} // namespace comb::bench
