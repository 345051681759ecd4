// SPDX-License-Identifier: MIT
#pragma once

#include <string>

struct pg_conn;

namespace comb::storage {

/// Which of the servers a URL names (host=a,b) a session may settle on.
enum class server_choice {
  writable,         ///< only one that takes writes (target_session_attrs=read-write)
  writable_else_any ///< one that takes writes; when none does, any (a primary turned read-only)
};

/// Opens a libpq connection (PQconnectdbParams; PQconnectStartParams when `start_only`) with TCP
/// keepalives and a TCP user timeout, so a server that went away without a word (a failover
/// behind a virtual address, a NAT that forgot the flow) fails the connection within about half
/// a minute instead of the kernel's quarter of an hour; a connect timeout, so one that accepts
/// and never answers (a pooler waiting for a backend) fails it within seconds; and, when
/// `writable_server`, a server that takes writes (`target_session_attrs=read-write`), so a pod
/// reconnecting during a failover does not settle on a standby. `conninfo` comes after them
/// and overrides any of them; Unix sockets ignore the TCP ones.
[[nodiscard]] ::pg_conn* open_link_checked(const std::string& conninfo, bool start_only,
                                           bool writable_server = true);

/// A blocking connect as `choice` asks (the caller checks PQstatus); `settled_for_any` when
/// no server took writes and the session is on one that refuses them.
struct chosen_link {
  ::pg_conn* conn = nullptr;
  bool settled_for_any = false;
};
[[nodiscard]] chosen_link open_chosen_link(const std::string& conninfo, server_choice choice);

} // namespace comb::storage
