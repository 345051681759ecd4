// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/hex.hpp"
#include "protocol/signature.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

/// An invite as the rules need it, keyed by the SHA-256 of its code (invite_code_hash), whichever
/// key the row has.
struct invite_state {
  std::int64_t expires_at = 0;
  std::int64_t max_uses = 0; ///< 0: unlimited
  std::int64_t use_count = 0;
  bool revoked = false;
  bool used = false; ///< set by the rules when a claim consumed a use
  /// Who minted it (none: an operator). A user's code works only while they still may invite:
  /// as the owner or an admin, or as a member where `members_may_invite`.
  std::optional<protocol::bytes32> created_by;
  bool members_may_invite = false;
  std::string stored_hash; ///< the row's code_hash
};

/// What a batch changed, as the members table needs it: written in this order, so that no
/// moment has two owners.
struct member_changes {
  std::vector<member> demoted;  ///< new role, not owner
  std::vector<protocol::bytes32> removed;
  std::vector<member> promoted; ///< to owner
  std::vector<member> added;    ///< in list order
};

/// A community's members in list order (oldest first), with the edits a batch makes to them.
/// Lookups are by hash, so a batch of k commands costs O(k), not O(k * members); it remembers
/// each touched key's role before the batch, so the changes come out without a full diff.
class roster {
public:
  explicit roster(std::vector<member> members);

  [[nodiscard]] std::optional<member_role> role_of(const protocol::bytes32& pubkey) const;

  /// The members now, in list order.
  [[nodiscard]] std::vector<member> members() const;

  [[nodiscard]] bool empty() const noexcept { return index_.empty(); }

  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }

  [[nodiscard]] std::optional<protocol::bytes32> owner() const;

  void add(const protocol::bytes32& pubkey, member_role role);
  void remove(const protocol::bytes32& pubkey);
  void set_role(const protocol::bytes32& pubkey, member_role role);

  /// The difference between the members given at construction and now. A key removed and
  /// added again is removed and added (it moves to the end of the list, and so in the table).
  [[nodiscard]] member_changes changes() const;

private:
  struct slot {
    member entry;
    bool present = true;
  };
  struct touch {
    std::optional<member_role> original;
    bool readded = false;
  };
  touch& touched(const protocol::bytes32& pubkey);

  std::vector<slot> slots_;
  std::unordered_map<protocol::bytes32, std::size_t, protocol::bytes32_hash> index_;
  std::unordered_map<protocol::bytes32, touch, protocol::bytes32_hash> touched_;
  std::vector<protocol::bytes32> touch_order_;
};

/// A ban a batch stores (`lifted`: an unban it deletes).
struct ban_change {
  protocol::bytes32 pubkey{};
  std::string reason;
  bool lifted = false;
  std::optional<protocol::bytes32> banned_by;
};

/// What to write for one batch: every command's outcome, which added or removed someone
/// (for its 8000/8001), whether the list must be rewritten, and the bans to store or lift.
struct membership_plan {
  std::vector<membership_outcome> outcomes;
  /// Per command: 8000 (added), 8001 (removed), or 0.
  std::vector<std::uint32_t> delta_kinds;
  bool list_changed = false;
  std::vector<ban_change> bans;
};

/// Applies `commands` in order to `members` (edited in place) and `invites` (keyed by code
/// hash hex; edited in place), following the role rules. Pure: the database is read before and
/// written after. `allowlist` is the community's allowlist, for backfill. `banned` holds the
/// commands' subjects that are banned (edited in place): they are never admitted.
///
/// A request is applied once. `earlier[i]` is what command i's request came to when it was
/// processed before (empty vector or nullopt: never); a request id repeated within the batch
/// counts as processed by its first command. A repeated request changes nothing and reports
/// `repeated_outcome`. Nobody bans `relay_keys` (the community's key and the relay key it is
/// derived from): the lists and room state they sign must stay readable.
/// `owner_held`: of the banned subjects, those whose ban only the owner (or the operator) may
/// lift, as the owner or the operator made it (read_bans).
[[nodiscard]] membership_plan plan_membership(
  roster& members, std::span<const membership_command> commands,
  std::map<std::string, invite_state>& invites, const std::vector<protocol::bytes32>& allowlist,
  std::set<protocol::bytes32>& banned, std::int64_t now,
  const std::vector<std::optional<membership_outcome>>& earlier = {},
  const std::set<protocol::bytes32>& relay_keys = {},
  const std::set<protocol::bytes32>& owner_held = {});

/// Joins that need no invite are for open communities: in a closed one (the community row just
/// locked says so, whatever the pod that sent them believed) each becomes a claim of the code it
/// carries, refused as an invalid invite when it carries none. Operator paths (no requester)
/// are left as they are.
[[nodiscard]] std::vector<membership_command>
joins_in_closed_community(std::span<const membership_command> commands);

/// What a request processed before reports when it comes again: the same refusal if it was
/// refused (an invalid code stays invalid); otherwise, for a join whose author is a member,
/// `already_member` (NIP-43's "duplicate: you are already a member"), else `already_processed`.
[[nodiscard]] membership_outcome repeated_outcome(const roster& members,
                                                  const membership_command& command,
                                                  membership_outcome first);

/// The invites table key of a minted code (and of a NIP-29 room's code): SHA-256 of the code,
/// hex. Blanks around the code (a pasted one) are not part of it.
[[nodiscard]] std::string invite_code_hash(std::string_view code);

/// invite_code_hash of the code a NIP-43 join's claim carries (protocol::typed_invite_code: a
/// whole invite link pasted stands for its `c`). Not for room codes, which may be any text.
[[nodiscard]] std::string claim_code_hash(std::string_view claim);

/// The two keys a code may be stored under in a community's invites: `chosen`, a chosen code's
/// (createclaim: protocol::claim_lookup_hash), and `minted`, a minted code's (invite_code_hash;
/// also chosen codes stored before the keyed hash). Every lookup by code tries both.
struct invite_code_hashes {
  std::string chosen;
  std::string minted;
};
[[nodiscard]] invite_code_hashes invite_hashes(const protocol::key_pair& relay_key,
                                               std::int64_t community_id, std::string_view code);

} // namespace comb::storage
