// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/hex.hpp"
#include "storage/membership_rules.hpp"

namespace comb::storage {

class pg_connection;

/// A stored invite as operators see it: by its hash; a chosen code is stored sealed too, which
/// only the relay key opens.
struct invite_summary {
  std::string code_hash; ///< minted: SHA-256 of the code; chosen: keyed (invite_hashes); hex
  std::int64_t max_uses = 0; ///< 0: unlimited
  std::int64_t use_count = 0;
  std::int64_t expires_at = 0; ///< unix seconds
  bool revoked = false;
  std::string created_by; ///< hex public key; "" when the operator minted it
  bool chosen = false;    ///< made with NIP-86 createclaim, not minted
};

/// What deleting one invite by its code did.
/// `not_manager`: the requester is (no longer) the owner or an admin.
enum class code_deletion { deleted, not_found, not_allowed, not_manager, failed };

enum class revoke_result {
  revoked,
  already_revoked,
  not_found, ///< no invite's hash starts with the prefix
  ambiguous, ///< several do: a longer prefix is needed
  failed,    ///< database error, see last_error()
};

/// Operator queries on invites (minting lives in membership_store, with the relay's rules).
/// No function throws.
class invite_store {
public:
  explicit invite_store(pg_connection& connection);

  /// The community's invites, newest first; nothing on a database error.
  [[nodiscard]] std::optional<std::vector<invite_summary>> list(std::int64_t community_id);

  /// Revokes the one invite whose code hash starts with `hash_prefix` (lowercase hex).
  [[nodiscard]] revoke_result revoke(std::int64_t community_id, std::string_view hash_prefix);

  /// Deletes the invite of `claim` (NIP-86 deleteclaim), minted or chosen (found by either hash
  /// under `relay_key`: invite_hashes), when
  /// `requester` is, by the stored roles, the owner, or an admin and the code is neither the
  /// owner's nor the operator's; a code stored under both hashes goes whole or not at all.
  /// Deleted, not revoked: nothing stays behind for a user to pile up.
  [[nodiscard]] code_deletion delete_code(std::int64_t community_id, std::string_view claim,
                                          const protocol::key_pair& relay_key,
                                          const protocol::bytes32& requester);

  /// Deletes invites that expired before `now` (unix seconds), in chunks; how many.
  std::uint64_t purge_expired(std::int64_t now);

  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

private:
  pg_connection& connection_;
  std::string last_error_;
};

} // namespace comb::storage
