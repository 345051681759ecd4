// SPDX-License-Identifier: MIT
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "storage/migrations.hpp"
#include "storage/pg_connection.hpp"

namespace comb::test {

/// Applies every migration before `version` and returns that one, not applied: a test stores
/// rows as they were stored before it, then applies it.
const storage::migration& migrated_up_to(storage::pg_connection& c, int version);

/// One event of `community` with `raw` and a tag row for each (name, value) of `rows`, all at
/// created_at 7, of kind 1 (a test sets the kinds it needs).
void insert_tagged(storage::pg_connection& c, const std::string& community, const char* id,
                   const std::string& raw, std::initializer_list<std::pair<const char*, const char*>> rows);

} // namespace comb::test
