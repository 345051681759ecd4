// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/signature.hpp"
#include "storage/community_keys.hpp"
#include "storage/community_store.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

class pg_connection;

/// Blocks until the given unix second has begun and returns the current unix second.
using second_waiter = std::function<std::int64_t(std::int64_t)>;

/// The production waiter: sleeps on the wall clock.
[[nodiscard]] std::int64_t sleep_until_second(std::int64_t second);

/// A community's members in list order, read on `connection`; nothing on a database error.
[[nodiscard]] std::optional<std::vector<member>> load_members(pg_connection& connection,
                                                              std::int64_t community_id);

/// Open (unexpired, unrevoked, not used up) invites one user may have minted in a community in
/// the last day: each mint is a row, and a user may ask again and again. Older ones do not count,
/// so invites that stay open for days (any number of uses, COMB_INVITE_USES) never lock out an
/// admin whose app mints one each time its invite dialog opens. The operator is not bounded.
inline constexpr std::int64_t max_open_invites_per_user = 100;

/// Why a user's invite was not minted. `taken`: a chosen code (create_claim) the community
/// already has.
enum class invite_refusal { none, not_allowed, too_many, taken, archived };

/// listclaims answers at most this many codes: an admin may hold many, and apps use the first.
inline constexpr std::int64_t max_listed_claims = 100;

/// A minted invite: the plain code (shown once, stored only hashed) and its bounds.
struct minted_invite {
  std::string code;
  std::int64_t expires_at = 0;
  std::int64_t max_uses = 0;
};

/// What `verify` found for one community.
struct list_check {
  bool matches = false;
  std::string detail; ///< what differs, for operators
};

/// Result of creating a community together with its owner.
struct community_creation {
  enum class status { created, host_exists, failed } result = status::failed;
  std::optional<community_row> community;
  membership_write write;
};

/// NIP-43 membership in Postgres. Every write path that changes members writes the new 13534
/// list (and its 8000/8001 deltas) in the same transaction, as its last step: the community
/// row is locked FOR NO KEY UPDATE first (serializing membership writers across pods without
/// blocking event inserts), the list lock (the list's address lock) last. No function throws.
class membership_store {
public:
  /// Signs each community's lists, deltas and room state with its own key, derived from
  /// `relay_key` (community_keys).
  membership_store(pg_connection& connection, const protocol::key_pair& relay_key);

  /// Applies `commands` in order in one transaction (group commit). Each gets its own outcome;
  /// if the transaction fails, none is applied and `committed` is false. When the commands
  /// change the members but the newest list already has second `now` (or a later one), nothing
  /// is written and `retry_at` says from which second to try again: lists keep pace with the
  /// clock. Every committed change calls note_access_change (version + notification).
  [[nodiscard]] membership_write apply(std::int64_t community_id,
                                       std::span<const membership_command> commands,
                                       std::int64_t now);

  /// Start-up upgrade to the current NIP-43 shape: when the community's live 13534 is not in it
  /// (`list_in_current_shape`), rewrites it from the stored members exactly as `republish` does,
  /// role definitions included, in one transaction under the community row lock, so pods that
  /// start at once rewrite it once. A current, missing or unreadable list is left alone
  /// (committed, no list, outcome nothing_to_do).
  [[nodiscard]] membership_write upgrade_list(std::int64_t community_id, std::int64_t now);
  /// `apply`, waiting (with `wait_until`) and trying again for as long as the list must wait.
  /// For callers that may block: comb-admin, start-up.
  [[nodiscard]] membership_write apply_paced(std::int64_t community_id,
                                             std::span<const membership_command> commands,
                                             std::int64_t now, const second_waiter& wait_until);

  /// Creates a community for `host` with `owner`, its list and delta, in one transaction.
  [[nodiscard]] community_creation create_community_with_owner(const std::string& host,
                                                               const protocol::bytes32& owner,
                                                               bool closed,
                                                               std::int64_t now);

  /// The members in list order, or nothing on a database error.
  [[nodiscard]] std::optional<std::vector<member>> members(std::int64_t community_id);

  /// Stores a new invite (hashed) and returns its code. With a `requester`, only if they may
  /// invite (owner, admin, or member where members may invite) and hold fewer than
  /// `max_open_invites_per_user` open invites minted in the last day: otherwise nothing,
  /// `last_error()` stays empty and `last_invite_refusal()` says which. Without one (the
  /// operator), always. `max_uses` 0: unlimited.
  [[nodiscard]] std::optional<minted_invite> mint_invite(std::int64_t community_id,
                                                         const std::optional<protocol::bytes32>& requester,
                                                         std::int64_t max_uses,
                                                         std::int64_t ttl_seconds,
                                                         std::int64_t now);

  /// Stores `claim`, a code `requester` chose (NIP-86 createclaim), as mint_invite stores a
  /// minted one and under the same rules, and keeps it sealed with the relay key as well
  /// (protocol::seal_claim), so listclaims can show it to the community's owner and admins
  /// (newer Flotilla puts the first in its invite links). False when not stored: `last_error()` is set on a database error, else
  /// `last_invite_refusal()` says why (`taken` when the community has the code already).
  [[nodiscard]] bool create_claim(std::int64_t community_id, const protocol::bytes32& requester,
                                  std::string_view claim, std::int64_t max_uses,
                                  std::int64_t ttl_seconds, std::int64_t now);

  /// The plain codes of the open chosen claims (create_claim) whose creator may still invite,
  /// the longest-lived first, at most `max_listed_claims`; nothing on a database error.
  [[nodiscard]] std::optional<std::vector<std::string>> open_claims(std::int64_t community_id,
                                                                    std::int64_t now);

  /// Moves the chosen codes stored under the plain hash (createclaim before codes were keyed)
  /// to the keyed one (invite_hashes), so that a copy of the database gives no way to test
  /// guesses at them either; run at start. How many moved, or nothing on a database error.
  [[nodiscard]] std::optional<std::int64_t> key_plain_claims();

  /// The key that signs the community's lists, deltas, room state and invites (28935), and that
  /// its NIP-11 `self` names; nothing on a database error (see last_error()).
  [[nodiscard]] std::optional<protocol::key_pair> signing_key(std::int64_t community_id);

  /// Whether members who are not admins may mint invites in this community.
  [[nodiscard]] bool members_may_invite(std::int64_t community_id);

  /// Compares the live 13534 with the stored members.
  [[nodiscard]] list_check verify(std::int64_t community_id);

  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }
  [[nodiscard]] invite_refusal last_invite_refusal() const noexcept { return last_invite_refusal_; }

private:
  struct locked_state;
  [[nodiscard]] membership_write apply_locked(std::int64_t community_id,
                                              std::span<const membership_command> commands,
                                              std::int64_t now);
  [[nodiscard]] bool live_list_outdated(std::int64_t community_id);
  /// An invite as insert_invite stores it.
  struct new_invite {
    std::string hash;                         ///< the row's code_hash
    std::optional<std::string> also_taken_by; ///< the code's hash under the other key, if any
    std::optional<std::string> sealed;        ///< a chosen code, sealed
    std::int64_t max_uses = 0;
    std::int64_t expires_at = 0;
  };
  /// Inserts one invite (mint_invite, create_claim): whether it was stored; on a refusal,
  /// last_invite_refusal_ says why.
  [[nodiscard]] bool insert_invite(std::int64_t community_id,
                                   const std::optional<protocol::bytes32>& requester,
                                   const new_invite& invite, std::int64_t now);
  /// One try of insert_invite: false with no error and no refusal when nothing explains why.
  [[nodiscard]] bool insert_invite_once(std::int64_t community_id,
                                        const std::optional<protocol::bytes32>& requester,
                                        const new_invite& invite, std::int64_t now);
  void leave_rooms(std::int64_t community_id, const std::vector<protocol::bytes32>& removed,
                   std::int64_t now, membership_write& out);
  void write_role_definitions(std::int64_t community_id, std::int64_t created_at,
                              membership_write& out);
  void write_list(std::int64_t community_id, std::int64_t newest_list_at,
                                std::span<const membership_command> commands,
                                const std::vector<std::uint32_t>& delta_kinds,
                                std::int64_t now, membership_write& out);

  /// A community's members as of this store's last committed write. Every change of the
  /// members table (ours, another pod's, a hand edit: migration 6's trigger) bumps the
  /// community's state version, so a snapshot of the same version is current and a batch need
  /// not read every member again.
  struct members_snapshot {
    std::int64_t state_version = 0;
    /// The live 13534's id (hex, "" for none) written with these members: a database that
    /// went back (a failover to a standby that missed this write, a restore) can reach the
    /// same version again through another pod's write, never with the same list.
    std::string list_id;
    std::vector<member> members;
  };
  [[nodiscard]] std::vector<member> members_before(std::int64_t community_id,
                                                   std::int64_t state_version,
                                                   const std::string& list_id);
  [[nodiscard]] std::string live_list_id(std::int64_t community_id);
  void keep_snapshot();
  /// Rolls back a write whose list must wait for the next second: nothing written, `retry_at`.
  [[nodiscard]] membership_write must_wait(std::size_t commands, std::int64_t until);
  void drop_snapshot(std::int64_t community_id);
  /// The community's signing key (community_keys); throws statement_failed on a database error.
  [[nodiscard]] const protocol::key_pair& key_of(std::int64_t community_id);

  pg_connection& connection_;
  community_keys keys_;
  std::string last_error_;
  invite_refusal last_invite_refusal_ = invite_refusal::none;
  std::unordered_map<std::int64_t, members_snapshot> snapshots_;
  std::optional<std::pair<std::int64_t, members_snapshot>> pending_snapshot_;
};

} // namespace comb::storage
