// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/signature.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

class pg_connection;

/// What a community's NIP-11 document says about it (NIP-86 changerelay*, `comb-admin community
/// set-info`); "" for what was never set.
struct community_info {
  std::string name;
  /// Nothing when never set (NIP-11 shows the deployment's); "" when emptied: an admin who
  /// empties it in Flotilla's space form means no description, not the deployment's.
  std::optional<std::string> description;
  std::string icon;
  std::string owner_hex; ///< the owner's pubkey, "" when there is none
};

/// A community as the relay needs it to route a connection.
struct community_row {
  std::int64_t id = 0;
  std::string host; ///< primary host, normalized
  bool closed = false; ///< closed: NIP-42 AUTH and membership required
  bool archived = false;
  community_info info; ///< filled by find_by_host
};

/// The info fields to change; an unset field is left alone, "" clears it.
struct community_info_update {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<std::string> icon;
  /// A NIP-86 caller: the change is made only while it still manages the community
  /// (storage::is_manager, under the row lock), else set_info answers `forbidden`.
  std::optional<protocol::bytes32> requested_by;
};

/// A community as operators see it (`comb-admin community list`).
struct community_summary {
  community_row row;
  std::int64_t member_count = 0;
  std::vector<std::string> aliases; ///< hosts other than the primary one, sorted
};

/// What an operator's lifecycle change did.
enum class lifecycle_result {
  changed,
  unchanged,   ///< already in the requested state; nothing written
  not_found,   ///< no community with that id
  host_exists, ///< add_host: the host already serves a community
  forbidden,   ///< set_info: `requested_by` no longer manages the community
  archived,    ///< set_info: `requested_by` met an archived community
  failed,      ///< database error, see last_error()
};

/// What switching a community's access did (set_access).
struct access_switch {
  lifecycle_result result = lifecycle_result::failed;
  /// The rooms' 39002 (and 39001 where a removed user held a room role) rewritten because
  /// closing removed non-members from them; in the order written.
  std::vector<relay_signed_event> room_events;
  /// Nothing written: a room's newest state already has second `now`; try again from this one.
  std::int64_t retry_at = 0;
};

/// Communities and their host names. Hosts are stored normalized (protocol::normalize_host).
/// No function throws; a database failure returns nothing / false and sets `last_error()`.
class community_store {
public:
  explicit community_store(pg_connection& connection);

  /// The community serving `host` (its primary host or an alias), archived ones included.
  [[nodiscard]] std::optional<community_row> find_by_host(const std::string& host);

  /// Fresh-install path: makes sure a community exists for `host` with `aliases` as further
  /// hosts (aliases already taken by another community are left alone). `closed` applies only
  /// when the community is created here: afterwards the database decides (set_access), and the
  /// row returned says what it decided. Idempotent; safe when several pods start at once.
  [[nodiscard]] std::optional<community_row> ensure(const std::string& host,
                                                    const std::vector<std::string>& aliases,
                                                    bool closed);

  /// Every change below runs in one transaction with note_access_change, so every pod enforces
  /// it within a second.

  /// Sets (`archived`) or clears `archived_at`. Archived communities refuse connections; their
  /// members, events and invites stay untouched until unarchived.
  [[nodiscard]] lifecycle_result set_archived(std::int64_t id, bool archived);

  /// Deletes the community with its hosts, members, events and invites (foreign key cascade).
  /// Writes no list: there is no community left to publish it in.
  [[nodiscard]] lifecycle_result remove(std::int64_t id);

  /// Registers `host` (normalized here) as a further host of the community. `host_exists` when
  /// any community, this one included, already answers to it.
  [[nodiscard]] lifecycle_result add_host(std::int64_t id, const std::string& host);

  /// Switches the community to closed (`closed`) or open access. Closing removes everyone who
  /// is not a community member from its rooms in the same transaction and rewrites the affected
  /// rooms' state signed with the community's key (derived from `relay_key`) at `now` (remove_from_rooms: paced per room, at
  /// most a second ahead of `now`; else nothing is written and `retry_at` says when to try again).
  [[nodiscard]] access_switch set_access(std::int64_t id, bool closed,
                                         const protocol::key_pair& relay_key, std::int64_t now);

  /// Changes the community's NIP-11 name, description and icon (the fields `update` sets).
  [[nodiscard]] lifecycle_result set_info(std::int64_t id, const community_info_update& update);

  /// Every community, ordered by primary host; nothing on a database error.
  [[nodiscard]] std::optional<std::vector<community_summary>> list_all();

  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

private:
  [[nodiscard]] std::optional<community_row> ensure_row(const std::string& primary,
                                                        const std::string& access);

  pg_connection& connection_;
  std::string last_error_;
};

} // namespace comb::storage
