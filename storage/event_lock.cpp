// SPDX-License-Identifier: MIT
#include "storage/event_lock.hpp"

#include <string>

#include "storage/event_rows.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {

void lock_community_events(pg_connection& c, std::int64_t community_id) {
  must(c.exec("SELECT pg_advisory_xact_lock($1::bigint)", {std::to_string(community_lock_key(community_id))}),
       "lock the community's events");
}

void share_community_events(pg_connection& c, std::int64_t community_id) {
  must(c.exec("SELECT pg_advisory_xact_lock_shared($1::bigint)",
              {std::to_string(community_lock_key(community_id))}),
       "share the community's event lock");
}

} // namespace comb::storage
