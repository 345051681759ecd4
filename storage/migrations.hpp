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

} // namespace comb::storage
