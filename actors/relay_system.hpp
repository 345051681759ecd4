// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>

#include "conf/settings.hpp"

namespace comb::actors {

/// What conf::load_settings cannot check alone, checked before anything is created (the relay
/// key file included): a database URL, a key file that loads if it exists, the cluster secret
/// and COMB_REDIS_URL (password never shown), and that the listen addresses resolve.
/// Nothing when the pod may start. `comb-relay --check-config` prints it.
[[nodiscard]] std::optional<std::string> startup_problem(const conf::relay_settings& settings);

/// Runs one pod: checks the database and key, spawns the actors in dependency order (storage
/// readers, fan-out, writer, directory), serves sockets on I/O threads, and on SIGINT/SIGTERM
/// stops accepting, answers what each connection asked before (its OKs included) and closes it
/// with 1001, lets the writers commit and their events reach Redis, and returns 0.
/// Start-up problems are printed as one clear line each and give a non-zero exit code.
[[nodiscard]] int run_relay(const conf::relay_settings& settings);

} // namespace comb::actors
