// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "actors/community/community_registry.hpp"
#include "actors/gateway/community_directory.hpp"
#include "actors/management/management_rules.hpp"
#include "actors/metrics.hpp"
#include "protocol/nip86.hpp"
#include "storage/community_store.hpp"
#include "storage/invite_store.hpp"
#include "storage/management_store.hpp"
#include "storage/membership_store.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

struct management_args {
  std::string database_url;
  /// The relay key, from which each community's signing key is derived (nobody bans either).
  /// Always set; optional only because a key pair has no empty state.
  std::optional<protocol::key_pair> relay_key;
  std::shared_ptr<community_registry> registry;
  /// Host answers (with each community's NIP-11 info) dropped after an info change.
  std::shared_ptr<community_directory> directory_cache;
  std::shared_ptr<relay_metrics> metrics; ///< may be unset (tests)
  std::chrono::seconds timeout{10};
  /// Bounds of a code made with createclaim, as of one minted for a REQ of 28935.
  std::int64_t invite_max_uses = 1;
  std::int64_t invite_ttl_seconds = 24 * 3600;
};

/// A call waiting for its community actor's membership write.
struct pending_call {
  management_callback reply;
  protocol::management_method method = protocol::management_method::supported_methods;
};

struct management_state {
  management_args args;
  std::unique_ptr<storage::pg_connection> connection;
  std::unique_ptr<storage::management_store> store;
  std::unique_ptr<storage::community_store> communities;
  std::unique_ptr<storage::membership_store> members; ///< invites: createclaim, listclaims
  std::unique_ptr<storage::invite_store> invites;     ///< deleteclaim
  std::unordered_map<std::uint64_t, pending_call> pending;
  std::uint64_t next_ticket = 1;
  static inline const char* name = "management";
};

/// Serves NIP-86 (run detached: libpq blocks). Checks the body, the NIP-98 header, that the
/// auth event was never used (in Postgres, so across pods) and that the caller is the
/// community's owner or an admin; then runs the method. Member and pubkey-ban changes go to the
/// community actor as membership commands (each writes its list and delta in one transaction,
/// and the member and ban caches follow); event bans, info changes and invite codes (claims)
/// are written here.
caf::behavior management_actor(caf::stateful_actor<management_state>* self, management_args args);

} // namespace comb::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::management_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::management_callback)
