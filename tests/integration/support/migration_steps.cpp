// SPDX-License-Identifier: MIT
#include "support/migration_steps.hpp"

#include <catch2/catch.hpp>

#include "support/pg_test_database.hpp"

namespace comb::test {

const storage::migration& migrated_up_to(storage::pg_connection& c, int version) {
  const storage::migration* found = nullptr;
  for (const auto& m : storage::all_migrations())
    if (m.version < version)
      REQUIRE(c.exec_script(m.sql).ok());
    else if (m.version == version)
      found = &m;
  REQUIRE(found);
  return *found;
}

void insert_tagged(storage::pg_connection& c, const std::string& community, const char* id,
                   const std::string& raw, std::initializer_list<std::pair<const char*, const char*>> rows) {
  scalar(c, "INSERT INTO events (community_id, id, pubkey, created_at, kind, raw)"
            " VALUES ($1::bigint, $2::bytea, '\\x02', 7, 1, $3) RETURNING 1",
         {community, std::string(id), raw});
  for (const auto& [name, value] : rows)
    scalar(c, "INSERT INTO event_tags VALUES ($1::bigint, $2::bytea, $3, $4, 7, 1) RETURNING 1",
           {community, std::string(id), std::string(name), std::string(value)});
}

} // namespace comb::test
