// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "storage/membership.hpp"

namespace comb::storage {

class pg_connection;

// Rows a membership write keeps besides members, list and deltas. Each function runs inside
// the caller's transaction, under its community row lock, and throws std::runtime_error when a
// statement fails, so that the caller rolls everything back.

/// What remembering the batch's request ids found.
struct request_claims {
  /// Per command: what its request came to when processed before; nullopt when it is new
  /// here (or carries no request id).
  std::vector<std::optional<membership_outcome>> earlier;
  /// The ids remembered now, each with the index of its first command.
  std::vector<std::pair<protocol::bytes32, std::size_t>> fresh;
};

/// Remembers each command's request id for this community, until `now` plus twice the request
/// window; an id remembered before (on any pod) comes back with its outcome then. Rows past
/// their time are deleted first.
[[nodiscard]] request_claims claim_requests(pg_connection& c, std::int64_t community_id,
                                            std::span<const membership_command> commands,
                                            std::int64_t now);

/// Deletes every community's request ids whose time has passed (a periodic sweep, outside any
/// transaction); returns how many. Does not throw: a failure deletes nothing (0).
std::uint64_t forget_processed_requests(pg_connection& c, std::int64_t now);

/// Stores what the freshly claimed requests came to, for their repeats.
void record_request_outcomes(pg_connection& c, std::int64_t community_id,
                             const request_claims& claims,
                             const std::vector<membership_outcome>& outcomes);

/// The `d` of every 33534 role definition `signer` (the community's key) stored in this community.
[[nodiscard]] std::set<std::string> read_role_ids(pg_connection& c, std::int64_t community_id,
                                                  const protocol::bytes32& signer);

/// Stores a 33534 (addressable, keyed by its `d`), indexed by its d tag for REQ filters.
void insert_role_definition(pg_connection& c, std::int64_t community_id,
                            const relay_signed_event& definition);

/// A stored 13534 as an event; nothing if it cannot be read.
[[nodiscard]] std::optional<protocol::event> parse_stored_list(std::string_view raw);

} // namespace comb::storage
