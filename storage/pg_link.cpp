// SPDX-License-Identifier: MIT
#include "storage/pg_link.hpp"

#include <libpq-fe.h>

namespace comb::storage {

::pg_conn* open_link_checked(const std::string& conninfo, bool start_only, bool writable_server) {
  // Silent for 10 s: probe every 5 s, give up after 3 unanswered; data unacknowledged for 30 s;
  // no answer to the start-up within 5 s.
  const char* const keywords[] = {"keepalives", "keepalives_idle", "keepalives_interval",
                                  "keepalives_count", "tcp_user_timeout", "connect_timeout",
                                  "target_session_attrs", "dbname", nullptr};
  const char* const values[] = {"1", "10", "5", "3", "30000", "5", writable_server ? "read-write" : "any",
                                conninfo.c_str(), nullptr};
  return start_only ? PQconnectStartParams(keywords, values, 1) : PQconnectdbParams(keywords, values, 1);
}

chosen_link open_chosen_link(const std::string& conninfo, server_choice choice) {
  ::pg_conn* conn = open_link_checked(conninfo, false, true);
  if (choice == server_choice::writable || (conn && PQstatus(conn) == CONNECTION_OK))
    return {conn, false};
  // No server takes writes (a primary turned read-only, a failover under way): a reader may
  // still read, from the primary or a standby, until a writable one is back.
  if (conn)
    PQfinish(conn);
  return {open_link_checked(conninfo, false, false), true};
}

} // namespace comb::storage
