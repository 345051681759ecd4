// SPDX-License-Identifier: MIT
#pragma once

#include <boost/json/value.hpp>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/signature.hpp"
#include "support/pg_test_database.hpp"

namespace comb::test {

/// What one comb-admin run produced.
struct admin_run {
  int exit_code = -1;
  std::string out;
  std::string err;

  /// stdout as the one JSON object `--json` promises; fails the test otherwise.
  [[nodiscard]] boost::json::object json() const;
};

/// Runs the built comb-admin binary with exactly `env` as its environment (plus PATH), so the
/// caller's COMB_* variables never leak in.
[[nodiscard]] admin_run run_admin(const std::vector<std::string>& args,
                                  const std::map<std::string, std::string>& env);

/// A fresh, empty database, a relay key file in a private folder, and comb-admin pointed at
/// both through the environment, as an operator would.
struct cli_fixture {
  cli_fixture();
  ~cli_fixture();
  cli_fixture(const cli_fixture&) = delete;
  cli_fixture& operator=(const cli_fixture&) = delete;

  /// comb-admin `args` with COMB_DATABASE_URL and COMB_RELAY_KEY_FILE set, plus `extra_env`.
  [[nodiscard]] admin_run admin(const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& extra_env = {}) const;

  /// Runs `args` and requires exit code 0, showing stderr otherwise.
  admin_run admin_ok(const std::vector<std::string>& args) const;

  /// One SQL value on a separate connection ("" if no row).
  std::string sql(const std::string& statement,
                                const storage::pg_params& params = {}) const;

  /// (hex pubkey, role) pairs of the stored members of `host`.
  [[nodiscard]] std::set<std::pair<std::string, std::string>> stored(const std::string& host) const;

  /// (hex pubkey, role) pairs named by the live 13534 of `host`; requires exactly one list,
  /// signed by the relay key.
  [[nodiscard]] std::set<std::pair<std::string, std::string>> listed(const std::string& host) const;

  /// The key the community whose primary host is `host` signs with.
  [[nodiscard]] protocol::key_pair signer(const std::string& host) const;

  fresh_database database;
  std::string folder;
  std::string key_file;
  protocol::key_pair relay_key;
};

/// A random public key: (hex, npub).
[[nodiscard]] std::pair<std::string, std::string> random_pubkey();

} // namespace comb::test
