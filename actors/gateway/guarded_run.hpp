// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>

#include "actors/metrics.hpp"

namespace comb::actors {

/// Runs `io` until it stops. An exception that escapes a handler (one no session caught: Beast
/// or Asio throwing in an operation's start, say on memory a client made it ask for) ends only
/// the operation that threw, not the pod: it is logged, counted
/// (comb_io_handler_exceptions_total) and `io` runs on, as Asio allows.
void run_guarded(boost::asio::io_context& io, relay_metrics& metrics);

} // namespace comb::actors
