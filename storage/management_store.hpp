// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/hex.hpp"
#include "storage/community_keys.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

class pg_connection;
class pg_reply;

/// One banned pubkey or event id with the reason given for it.
struct ban_entry {
  protocol::bytes32 key{};
  std::string reason;

  friend bool operator==(const ban_entry&, const ban_entry&) = default;
};

/// A community's bans as stored: the truth every pod's ban cache is loaded from.
struct community_bans {
  std::vector<ban_entry> pubkeys;
  std::vector<ban_entry> events;
};

/// Every ban of `community_id`, oldest first; nothing on a database error. Pods load it when a
/// community's actor starts (and may load it again whenever the stored bans changed).
[[nodiscard]] std::optional<community_bans> load_bans(pg_connection& connection,
                                                      std::int64_t community_id);

/// Event bans one community may hold: every pod reloads all of them on each change of access, so
/// an admin banning random ids in a loop would make each ban cost every pod more.
inline constexpr std::int64_t max_banned_events = 10000;

/// Pubkey bans a NIP-86 caller may bring a community to, for the same reason, and because every
/// pod holds each one with its reason (up to 1 KiB) in its access state. Checked before the ban
/// is queued, so calls in flight at once may pass it by as many; the operator's bans (the CLI)
/// are not counted against it.
inline constexpr std::int64_t max_banned_pubkeys = 10000;

/// What a NIP-86 write that is not a membership change came to.
enum class management_result {
  changed,
  unchanged, ///< already in the requested state
  refused,   ///< not allowed (e.g. banning one of the relay's own NIP-43 events)
  full,      ///< the community holds `max_banned_events` event bans already
  forbidden, ///< the caller is no longer the community's owner or an admin
  owner_held, ///< an admin may not: the owner wrote the event, or the owner or the operator made the ban
  archived,  ///< a NIP-86 caller's change met an archived community
  failed,    ///< database error, see last_error()
};

/// Whether `pubkey` is the community's owner or an admin now; nothing on a database error. Read
/// in an open transaction after locking the community row (as every change of roles takes it),
/// it is the role that stands until commit: a caller demoted while its request waited on the
/// lock is seen as demoted.
[[nodiscard]] std::optional<bool> is_manager(pg_connection& connection, std::int64_t community_id,
                                                const protocol::bytes32& pubkey);

/// The NIP-86 state that is not membership: used NIP-98 events, banned events. Pubkey bans are
/// membership writes (membership_store), because a ban removes a member in the same transaction
/// as the new list. No function throws.
class management_store {
public:
  /// `relay_key`: each community's key is derived from it (community_keys); the events either
  /// signed are the relay's own, which nobody bans.
  management_store(pg_connection& connection, const protocol::key_pair& relay_key);

  /// Whether `pubkey` signs the community's lists and room state, or is the relay key that key
  /// is derived from (community_keys::own_keys); nothing on a database error (last_error()).
  [[nodiscard]] std::optional<bool> signs_for(std::int64_t community_id, const protocol::bytes32& pubkey);

  /// Records a NIP-98 event id as used until `expires_at` (after which it fails the time check
  /// anyway, so it is purged). True when it was fresh; false when any pod used it already;
  /// nothing on a database error.
  [[nodiscard]] std::optional<bool> spend_http_auth(const protocol::bytes32& event_id,
                                                    std::int64_t expires_at, std::int64_t now);

  /// Whether the community holds max_banned_pubkeys pubkey bans already; nothing on a database
  /// error.
  [[nodiscard]] std::optional<bool> pubkey_bans_full(std::int64_t community_id);

  /// Deletes the event from the community and bans its id there, in one transaction that also
  /// takes the community's event lock exclusively, so no insert of it can slip between. With
  /// `manager` (a NIP-86 caller), only while it still manages the community (is_manager).
  [[nodiscard]] management_result ban_event(std::int64_t community_id,
                                            const protocol::bytes32& event_id,
                                            const std::string& reason,
                                            const protocol::bytes32& banned_by,
                                            std::optional<protocol::bytes32> manager = std::nullopt);

  /// Lifts an event ban (the event stays deleted until someone publishes it again); with
  /// `manager`, only while it still manages the community.
  [[nodiscard]] management_result allow_event(std::int64_t community_id,
                                              const protocol::bytes32& event_id,
                                              std::optional<protocol::bytes32> manager = std::nullopt);

  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

  /// The community's state version the last ban_event or allow_event committed at, or (when
  /// it changed nothing) found its result at; 0 when it failed before reading it.
  [[nodiscard]] std::int64_t last_version() const noexcept { return last_version_; }

private:
  /// note_access_change in the open transaction; false (with last_error) when it failed.
  [[nodiscard]] bool noted(std::int64_t community_id);
  [[nodiscard]] management_result ban_event_locked(std::int64_t community_id,
                                                   const protocol::bytes32& event_id,
                                                   const std::string& reason,
                                                   const protocol::bytes32& banned_by,
                                                   const std::optional<protocol::bytes32>& manager);
  /// The community row locked in the open transaction, then is_manager(`manager`) when set:
  /// `changed` to go on, `forbidden`, or `failed` (with last_error).
  [[nodiscard]] management_result admin_may_lift(std::int64_t community_id,
                                                 const protocol::bytes32& event_id,
                                                 const protocol::bytes32& manager);
  [[nodiscard]] management_result admin_may_ban(std::int64_t community_id,
                                                const protocol::bytes32& author,
                                                const protocol::bytes32& manager);
  [[nodiscard]] management_result lock_for(std::int64_t community_id,
                                           const std::optional<protocol::bytes32>& manager);

  [[nodiscard]] std::optional<bool> relays_own(std::int64_t community_id, const pg_reply& stored);

  pg_connection& connection_;
  community_keys keys_;
  std::string last_error_;
  std::int64_t last_version_ = 0;
};

} // namespace comb::storage
