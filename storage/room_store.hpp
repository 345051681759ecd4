// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/room_rules.hpp"
#include "protocol/signature.hpp"
#include "storage/community_keys.hpp"
#include "storage/membership.hpp"
#include "storage/room_rows.hpp" // load_rooms, for the callers

namespace comb::storage {

class pg_connection;

/// Bounds on what rooms a client can make the relay hold.
inline constexpr std::int64_t max_rooms_per_community = 1000;
inline constexpr std::int64_t max_members_per_room = 10000;
inline constexpr std::int64_t max_invites_per_room = 1000;

/// The result of one room request's transaction.
struct room_write {
  bool committed = false;
  std::string error; ///< why nothing was written, when !committed
  protocol::room_outcome outcome = protocol::room_outcome::failed;
  /// What the transaction stored that subscribers should see, in order: the request itself,
  /// the relay-signed 39000-39003 it rewrote, the 9001 it issued for a leave.
  std::vector<relay_signed_event> events;
  /// The community's state version after the transaction (note_access_change); 0 when unknown.
  std::int64_t state_version = 0;
  /// Not committed because the room's newest state already has this second: try again then.
  std::int64_t retry_at = 0;
};

/// Room requests applied in one transaction (room_store::apply_batch).
struct room_batch_write {
  std::vector<room_write> writes; ///< each request's, in order; empty when nothing committed
  std::string error;              ///< why nothing was written
  /// Not committed because a room's newest state already has this second: try again then.
  std::int64_t retry_at = 0;
};

/// A room request to apply: the verified 9000-9022 event, read, with its JSON as stored.
struct room_command {
  protocol::event ev;
  std::string json;
  protocol::room_request request;
};

/// NIP-29 rooms in Postgres. Each request, or batch of them (apply_batch), runs in one
/// transaction under the community row lock (FOR NO KEY UPDATE, as membership writes take it, so
/// the two never interleave): plan by the room rules, write the rows, store the request, rewrite
/// exactly the relay-signed events the change affects with created_at = max(now, newest room
/// state + 1) (in a batch, the second the first request signed at), never ahead of now (else
/// nothing is written and `retry_at` says when), and note the access change. A no-op writes nothing; a failure rolls everything back. No function throws.
class room_store {
public:
  /// Signs each community's room state with its own key, derived from `relay_key`.
  room_store(pg_connection& connection, const protocol::key_pair& relay_key);

  /// One request alone: apply_batch of one.
  [[nodiscard]] room_write apply(std::int64_t community_id, const room_command& command,
                                 std::int64_t now);

  /// `commands` one after another in one transaction, as apply would each: what one writes the
  /// next one reads. Those after the first that signs a room's state sign at its second
  /// (so a burst of joins to one room is answered at once, not one a second); each room's
  /// state is signed, stored and delivered once, as the last of them left it. A failure or a
  /// wait applies none.
  [[nodiscard]] room_batch_write apply_batch(std::int64_t community_id,
                                             const std::vector<room_command>& commands,
                                             std::int64_t now);

  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

private:
  pg_connection& connection_;
  community_keys keys_;
  std::string last_error_;
};

/// What restore_rooms did.
struct rooms_restore {
  bool committed = false;
  std::string error; ///< why nothing was written, when !committed
  std::size_t restored = 0;            ///< rooms created
  std::size_t existing = 0;            ///< rooms the community had already (left alone)
  std::size_t rooms_left_out = 0;      ///< rooms past max_rooms_per_community
  std::size_t members_left_out = 0;    ///< non-members of a closed community, members past the bound
  std::vector<relay_signed_event> events; ///< the relay-signed state written
  std::int64_t state_version = 0;      ///< after the transaction; 0 when nothing was written
  /// Not committed because a room id's newest state already has this second: try again then.
  std::int64_t retry_at = 0;
};

/// Creates `rooms` in the community as another relay's state described them (flags, members
/// in order with their roles, pins), for a community moved by export and import: one
/// transaction under the community row lock, each room's 39000-39003 (and 39005 when it has
/// pins) signed by the community's key (read_community_key) at `now`, and the access change
/// noted, as a room change does.
/// A room the community has already is left alone (a second run changes nothing); a closed
/// community's rooms take only its members; rooms and members past the bounds are left out.
/// All are counted. No function throws.
[[nodiscard]] rooms_restore restore_rooms(pg_connection& connection,
                                          const protocol::key_pair& relay_key,
                                          std::int64_t community_id,
                                          const std::vector<protocol::room_state>& rooms,
                                          std::int64_t now);

/// Inside an open membership transaction that removed `pubkeys` from the community: removes
/// them from every room of it and rewrites each affected room's 39002 (and 39001 when one had
/// a role), at `now`, or a second later in a room whose newest state has second `now` already.
/// Returns the events written, or, when an affected room's newest state is ahead of `now` (a
/// removal went ahead this second), nothing written and the second to wait for in `wait_until`. Throws
/// std::runtime_error on a database error (the caller rolls back).
[[nodiscard]] std::vector<relay_signed_event>
remove_from_rooms(pg_connection& tx, const protocol::key_pair& community_key, std::int64_t community_id,
                  const std::vector<protocol::bytes32>& pubkeys, std::int64_t now,
                  std::int64_t& wait_until);

} // namespace comb::storage
