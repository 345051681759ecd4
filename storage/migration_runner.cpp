// SPDX-License-Identifier: MIT
// Applies the migrations of migrations.cpp that a database has not recorded yet.
#include "storage/migrations.hpp"

#include <chrono>
#include <set>
#include <thread>

#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// Any fixed number works as long as nothing else in the database uses it; "comb" in ASCII.
constexpr const char* migration_lock_key = "1668246882";

constexpr const char* create_ledger = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
)sql";

std::optional<std::string> failure(const char* step, const pg_reply& reply) {
  return std::string("schema migration: ") + step + ": " + reply.error();
}

/// Postgres's lock_not_available: a statement's lock_timeout passed.
constexpr const char* lock_not_available = "55P03";

/// One try of `m` in its own transaction, whose statements wait at most `lock_wait_ms` for a
/// lock: the failed reply (rolled back), or nothing once committed.
std::optional<pg_reply> try_one(pg_connection& connection, const migration& m, const migration_lock_policy& locks) {
  auto begin = connection.exec("BEGIN");
  if (!begin.ok())
    return begin;
  auto wait = connection.exec("SET LOCAL lock_timeout = " + std::to_string(locks.lock_wait_ms));
  auto script = wait.ok() ? connection.exec_script(m.sql) : std::move(wait);
  auto record = script.ok() ? connection.exec("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                              {std::to_string(m.version), std::string(m.name)})
                            : std::move(script);
  if (!record.ok()) {
    (void)connection.exec("ROLLBACK");
    return record;
  }
  auto commit = connection.exec("COMMIT");
  return commit.ok() ? std::nullopt : std::optional(std::move(commit));
}

std::optional<std::string> apply_one(pg_connection& connection, const migration& m,
                                     const migration_lock_policy& locks) {
  for (int attempt = 1;; ++attempt) {
    auto failed = try_one(connection, m, locks);
    if (!failed || failed->sqlstate() != lock_not_available)
      return failed ? failure(("version " + std::to_string(m.version)).c_str(), *failed) : std::nullopt;
    if (attempt >= locks.attempts)
      return "schema migration: version " + std::to_string(m.version) + ": its tables stayed locked by other sessions for "
             + std::to_string(attempt) + " tries of " + std::to_string(locks.lock_wait_ms)
             + " ms (a long transaction, such as a comb-admin export?): " + failed->error();
    std::this_thread::sleep_for(std::chrono::milliseconds(locks.pause_ms));
  }
}

std::optional<std::string> apply_missing(pg_connection& connection, std::span<const migration> migrations,
                                         const migration_lock_policy& locks) {
  if (auto ledger = connection.exec(create_ledger); !ledger.ok())
    return failure("create schema_migrations", ledger);
  auto applied = connection.exec("SELECT version FROM schema_migrations");
  if (!applied.ok())
    return failure("read schema_migrations", applied);
  std::set<std::int64_t> done;
  for (int row = 0; row < applied.rows(); ++row)
    done.insert(applied.integer(row, 0));
  for (const auto& m : migrations)
    if (!done.contains(m.version))
      if (auto error = apply_one(connection, m, locks))
        return error;
  return std::nullopt;
}

} // namespace

std::optional<std::string> apply_migrations(pg_connection& connection) {
  return apply_migrations(connection, all_migrations(), migration_lock_policy{});
}

std::optional<std::string> apply_migrations(pg_connection& connection, std::span<const migration> migrations,
                                            migration_lock_policy locks) {
  if (auto error = connection.ensure_connected())
    return "schema migration: " + *error;
  // A pod starting while another migrates waits for it however long it takes: the connection's
  // lock timeout (meant for requests) is lifted meanwhile and put back after. Each migration's
  // statements wait for their tables' locks as migration_lock_policy says.
  auto timeout = connection.exec("SHOW lock_timeout");
  if (!timeout.ok())
    return failure("read the lock timeout", timeout);
  if (auto lifted = connection.exec("SET lock_timeout = 0"); !lifted.ok())
    return failure("lift the lock timeout", lifted);
  const std::string restore = "SET lock_timeout = '" + std::string(timeout.text(0, 0)) + "'";
  // Session-level lock: held across the per-migration transactions, released below or when
  // the connection ends.
  std::optional<std::string> error;
  if (auto lock = connection.exec("SELECT pg_advisory_lock($1::bigint)", {migration_lock_key}); !lock.ok()) {
    error = failure("lock", lock);
  } else {
    error = apply_missing(connection, migrations, locks);
    (void)connection.exec("SELECT pg_advisory_unlock($1::bigint)", {migration_lock_key});
  }
  (void)connection.exec(restore);
  return error;
}

} // namespace comb::storage
