// SPDX-License-Identifier: MIT
#include "admin/session.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <thread>

#include "conf/relay_key.hpp"
#include "protocol/host.hpp"
#include "protocol/nip19.hpp"
#include "storage/database_clock.hpp"
#include "storage/migrations.hpp"
#include "storage/relay_identity.hpp"

namespace comb::admin {

namespace {

/// How far the database's clock is ahead of this machine's, measured as a session opens.
/// comb-admin runs wherever the operator is; a list it signed with a clock an hour ahead would
/// hold every join on every pod for that hour (lists keep pace with the clock), so its times are
/// the database's, which every pod's clock is watched against (comb_database_clock_offset_ms).
std::atomic<std::int64_t> database_ahead_ms{0};

std::int64_t local_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

std::string admin_options::effective_key_file() const {
  return key_file.empty() ? data_dir + "/relay.key" : key_file;
}

admin_session::admin_session(const std::string& database_url)
  : connection(database_url), communities(connection) {}

std::unique_ptr<admin_session> open_session(const admin_options& options, reporter& out) {
  if (options.database_url.empty()) {
    out.fail(exit_code::usage, "no database: pass --database-url or set COMB_DATABASE_URL");
    return nullptr;
  }
  auto session = std::make_unique<admin_session>(options.database_url);
  if (auto error = session->connection.ensure_connected()) {
    out.fail(exit_code::database, "cannot connect to the database: " + *error);
    return nullptr;
  }
  if (auto error = storage::apply_migrations(session->connection)) {
    out.fail(exit_code::database, *error);
    return nullptr;
  }
  if (auto ahead = storage::database_clock_offset_ms(session->connection))
    database_ahead_ms.store(*ahead);
  return session;
}

std::optional<protocol::key_pair> load_key(const admin_options& options, reporter& out) {
  std::string error;
  auto key = conf::load_relay_key(options.effective_key_file(), false, error);
  if (!key) {
    out.fail(exit_code::usage, error + " (pass --key-file or set COMB_RELAY_KEY_FILE to the"
                                       " relay's key)");
    return key;
  }
  // Checked before any change: a list signed with another key would be one no app trusts.
  auto session = open_session(options, out);
  if (!session)
    return std::nullopt;
  if (auto problem = storage::check_relay_identity(session->connection, *key, options.effective_key_file())) {
    out.fail(exit_code::usage, *problem);
    return std::nullopt;
  }
  return key;
}

std::optional<std::string> parse_host(std::string_view host, reporter& out) {
  auto normalized = protocol::normalize_host(host);
  if (!normalized)
    out.fail(exit_code::usage, "not a valid host: \"" + std::string(host) + "\"");
  return normalized;
}

std::optional<storage::community_row> find_community(admin_session& session,
                                                     std::string_view host, reporter& out) {
  auto normalized = parse_host(host, out);
  if (!normalized)
    return std::nullopt;
  auto community = session.communities.find_by_host(*normalized);
  if (community) {
    describe_community(*community, out);
    return community;
  }
  if (!session.communities.last_error().empty())
    out.fail(exit_code::database, "database error: " + session.communities.last_error());
  else
    out.fail(exit_code::not_found, "unknown host: no community serves " + *normalized);
  return std::nullopt;
}

std::optional<protocol::bytes32> parse_pubkey(std::string_view text, reporter& out) {
  std::string candidate(text);
  // Hex keys are lowercase on the wire; an operator pasting uppercase means the same key.
  if (candidate.size() == 64)
    std::transform(candidate.begin(), candidate.end(), candidate.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto key = protocol::parse_public_key(candidate);
  if (!key)
    out.fail(exit_code::usage, "not a public key: \"" + std::string(text)
                                 + "\" (expected 64 hex characters or an npub)");
  return key;
}

std::string npub_of(const protocol::bytes32& pubkey) {
  return protocol::encode_nip19("npub", pubkey);
}

std::int64_t unix_now() {
  return (local_ms() + database_ahead_ms.load()) / 1000;
}

std::int64_t sleep_until_database_second(std::int64_t second) {
  const auto local_due = std::chrono::milliseconds(second * 1000 - database_ahead_ms.load());
  std::this_thread::sleep_until(std::chrono::system_clock::time_point(local_due));
  return unix_now();
}

void describe_community(const storage::community_row& community, reporter& out) {
  out.fields()["host"] = community.host;
  out.fields()["community_id"] = community.id;
}

} // namespace comb::admin
