// SPDX-License-Identifier: MIT
#include "actors/gateway/guarded_run.hpp"

#include <chrono>
#include <exception>
#include <spdlog/spdlog.h>
#include <string>

namespace comb::actors {
namespace {

/// At most one line a second: whoever makes operations throw does not also fill the log.
void report(relay_metrics& metrics, const std::string& what) {
  static thread_local std::chrono::steady_clock::time_point last_logged{};
  bump(metrics.io_handler_exceptions);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_logged < std::chrono::seconds(1))
    return;
  last_logged = now;
  spdlog::error("a socket operation threw and was dropped (comb_io_handler_exceptions_total counts them): {}", what);
}

} // namespace

void run_guarded(boost::asio::io_context& io, relay_metrics& metrics) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      report(metrics, e.what());
    } catch (...) {
      report(metrics, "an exception of unknown type");
    }
  }
}

} // namespace comb::actors
