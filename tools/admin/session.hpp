// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "admin/output.hpp"
#include "protocol/signature.hpp"
#include "storage/community_store.hpp"
#include "storage/pg_connection.hpp"

namespace comb::admin {

/// The options every command shares (flags, or the relay's own environment variables).
struct admin_options {
  std::string database_url; ///< --database-url / COMB_DATABASE_URL
  std::string data_dir = "./var"; ///< --data-dir / COMB_DATA_DIR
  std::string key_file;     ///< --key-file / COMB_RELAY_KEY_FILE; empty: <data_dir>/relay.key
  std::string redis_url;    ///< --redis-url / COMB_REDIS_URL; empty: no live push
  std::string cluster_secret; ///< --cluster-secret / COMB_CLUSTER_SECRET: MACs live pushes
  bool json = false;

  [[nodiscard]] std::string effective_key_file() const;
};

/// An open database with the schema in place (migrated like the relay does at start, so
/// comb-admin may run before the relay ever did).
struct admin_session {
  explicit admin_session(const std::string& database_url);

  storage::pg_connection connection;
  storage::community_store communities;
};

/// Connects and migrates; nothing (with the failure reported) when that is impossible.
[[nodiscard]] std::unique_ptr<admin_session> open_session(const admin_options& options,
                                                          reporter& out);

/// The relay key that signs lists. Never created here: a key made up by comb-admin would sign
/// lists no pod recognizes as its own.
[[nodiscard]] std::optional<protocol::key_pair> load_key(const admin_options& options,
                                                         reporter& out);

/// The community serving `host` (any of its hosts); reports a bad or unknown host.
[[nodiscard]] std::optional<storage::community_row> find_community(admin_session& session,
                                                                   std::string_view host,
                                                                   reporter& out);

/// Opens a session, finds the community serving `host`, then returns `run(session, community)`;
/// or the exit code of whichever step failed (already reported).
template <typename Run>
int on_community(const admin_options& options, std::string_view host, reporter& out, Run run) {
  auto session = open_session(options, out);
  if (!session)
    return out.failed_code();
  auto community = find_community(*session, host, out);
  if (!community)
    return out.failed_code();
  return run(*session, *community);
}

/// A normalized host, or nothing with the failure reported.
[[nodiscard]] std::optional<std::string> parse_host(std::string_view host, reporter& out);

/// A public key given as 64 hex characters or an npub, or nothing with the failure reported.
[[nodiscard]] std::optional<protocol::bytes32> parse_pubkey(std::string_view text,
                                                            reporter& out);

[[nodiscard]] std::string npub_of(const protocol::bytes32& pubkey);

/// The database's clock, in Unix seconds, as measured when the last session opened.
[[nodiscard]] std::int64_t unix_now();

/// Sleeps until the database's clock reaches `second`; returns unix_now() then.
std::int64_t sleep_until_database_second(std::int64_t second);

/// Records the community in the JSON result.
void describe_community(const storage::community_row& community, reporter& out);

} // namespace comb::admin
