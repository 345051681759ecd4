// SPDX-License-Identifier: MIT
#include "storage/pg_link.hpp"

#include <libpq-fe.h>
#include <string>

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

namespace {

/// libpq refused every server for refusing writes (not for being out of reach).
bool refused_as_read_only(::pg_conn* conn) {
  const std::string error = conn ? PQerrorMessage(conn) : "";
  return error.find("read-only") != std::string::npos || error.find("hot standby") != std::string::npos;
}

/// A server before PostgreSQL 14 reports neither setting: libpq refused it as read-only just
/// before, so it is taken to be.
bool session_refuses_writes(::pg_conn* conn) {
  bool reported = false;
  for (const char* setting : {"default_transaction_read_only", "in_hot_standby"})
    if (const char* value = PQparameterStatus(conn, setting)) {
      reported = true;
      if (std::string(value) == "on")
        return true;
    }
  return !reported;
}

} // namespace

chosen_link open_chosen_link(const std::string& conninfo, server_choice choice) {
  ::pg_conn* conn = open_link_checked(conninfo, false, true);
  if (choice == server_choice::writable || (conn && PQstatus(conn) == CONNECTION_OK)
      || !refused_as_read_only(conn))
    return {conn, false};
  // No server takes writes (a primary turned read-only, a failover under way): a reader may
  // still read, from the primary or a standby, until a writable one is back.
  PQfinish(conn);
  conn = open_link_checked(conninfo, false, false);
  return {conn, conn && PQstatus(conn) == CONNECTION_OK && session_refuses_writes(conn)};
}

} // namespace comb::storage
