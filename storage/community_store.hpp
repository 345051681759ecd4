// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace comb::storage {

class pg_connection;

/// A community as the relay needs it to route a connection.
struct community_row {
  std::int64_t id = 0;
  std::string host; ///< primary host, normalized
  bool closed = false; ///< closed: NIP-42 AUTH and membership required
  bool archived = false;
};

/// Communities and their host names. Hosts are stored normalized (protocol::normalize_host).
/// No function throws; a database failure returns nothing / false and sets `last_error()`.
class community_store {
public:
  explicit community_store(pg_connection& connection);

  /// The community serving `host` (its primary host or an alias), archived ones included.
  [[nodiscard]] std::optional<community_row> find_by_host(const std::string& host);

  /// Fresh-install path: makes sure a community exists for `host` with `aliases` as further
  /// hosts (aliases already taken by another community are left alone) and sets its access.
  /// Idempotent; safe when several pods start at once.
  [[nodiscard]] std::optional<community_row> ensure(const std::string& host,
                                                    const std::vector<std::string>& aliases,
                                                    bool closed);

  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

private:
  [[nodiscard]] std::optional<community_row> ensure_row(const std::string& primary,
                                                        const std::string& access);

  pg_connection& connection_;
  std::string last_error_;
};

} // namespace comb::storage
