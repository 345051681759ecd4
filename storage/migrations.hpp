// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <span>
#include <string>

namespace comb::storage {

class pg_connection;

/// One schema change. Released migrations are never edited: a fix is a new migration.
struct migration {
  int version = 0;
  const char* name = "";
  const char* sql = ""; ///< constant DDL, run as one script inside the migration's transaction
};

/// Every migration this build knows, in version order.
[[nodiscard]] std::span<const migration> all_migrations() noexcept;

/// Brings the schema up to date: applies, in order and each in its own transaction, the
/// migrations not yet recorded in `schema_migrations`. A session advisory lock serializes
/// relay processes that start at once. Returns the error, or nothing when the schema is current.
/// Versions recorded by a newer build are left alone.
[[nodiscard]] std::optional<std::string> apply_migrations(pg_connection& connection);

/// How a migration waits for the table locks its statements need. Pods of the older build keep
/// serving while one migrates, and everything that touches a table queues behind a DDL statement
/// waiting for its lock (an export's long transaction, say): so a migration waits `lock_wait` at
/// a time, rolls back and lets that queue drain for `pause`, `attempts` times in all.
struct migration_lock_policy {
  int lock_wait_ms = 2000;
  int pause_ms = 1000;
  int attempts = 200; ///< about 10 minutes
};

/// apply_migrations for `migrations` (all_migrations() there), under `locks`.
[[nodiscard]] std::optional<std::string> apply_migrations(pg_connection& connection,
                                                          std::span<const migration> migrations,
                                                          migration_lock_policy locks);

} // namespace comb::storage
