// SPDX-License-Identifier: MIT
// Applies the migrations of migrations.cpp that a database has not recorded yet.
#include "storage/migrations.hpp"

#include <set>

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

std::optional<std::string> apply_one(pg_connection& connection, const migration& m) {
  if (auto begin = connection.exec("BEGIN"); !begin.ok())
    return failure("begin", begin);
  auto script = connection.exec_script(m.sql);
  auto record = script.ok() ? connection.exec(
                                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                {std::to_string(m.version), std::string(m.name)})
                            : pg_reply{};
  if (!script.ok() || !record.ok()) {
    (void)connection.exec("ROLLBACK");
    return failure(("version " + std::to_string(m.version)).c_str(),
                   script.ok() ? record : script);
  }
  if (auto commit = connection.exec("COMMIT"); !commit.ok())
    return failure("commit", commit);
  return std::nullopt;
}

std::optional<std::string> apply_missing(pg_connection& connection) {
  if (auto ledger = connection.exec(create_ledger); !ledger.ok())
    return failure("create schema_migrations", ledger);
  auto applied = connection.exec("SELECT version FROM schema_migrations");
  if (!applied.ok())
    return failure("read schema_migrations", applied);
  std::set<std::int64_t> done;
  for (int row = 0; row < applied.rows(); ++row)
    done.insert(applied.integer(row, 0));
  for (const auto& m : all_migrations())
    if (!done.contains(m.version))
      if (auto error = apply_one(connection, m))
        return error;
  return std::nullopt;
}

} // namespace

std::optional<std::string> apply_migrations(pg_connection& connection) {
  if (auto error = connection.ensure_connected())
    return "schema migration: " + *error;
  // A pod starting while another migrates waits for it however long it takes, and a migration
  // waits for the locks its statements need: the connection's lock timeout (meant for requests)
  // is lifted meanwhile and put back after.
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
    error = apply_missing(connection);
    (void)connection.exec("SELECT pg_advisory_unlock($1::bigint)", {migration_lock_key});
  }
  (void)connection.exec(restore);
  return error;
}

} // namespace comb::storage
