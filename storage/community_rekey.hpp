// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/signature.hpp"

namespace comb::storage {

class pg_connection;

/// What moving a community's events to its own key did.
struct rekey_result {
  bool committed = false;
  std::string error; ///< why the last page was not written, when !committed
  std::size_t signed_again = 0; ///< events stored again, signed with the community's key
  std::size_t dropped = 0;      ///< relay-key copies that a community-key event already replaced
  std::size_t unreadable = 0;   ///< stored events unreadable or wrongly signed, left as they are
  std::int64_t retry_at = 0;    ///< unused (in_transaction's shape)
};

/// Start-up step for a community written before each community had its own key: every event
/// that a newer one of its address replaces and that the relay signed with `relay_key` there
/// (its 13534, 33534, 39000-39005) is stored again signed with the community's key (same kind,
/// tags, content and created_at) and the relay-key copy deleted, so apps that keep one list per
/// kind and author across relays see each community's own, and the next change replaces it.
/// Deltas and the relay's room changes (8000, 8001, 9000, 9001, 9008) are history and stay. A copy whose address
/// already has a community-key event as new or newer is only deleted; one that cannot be read
/// or whose signature fails is left (and counted). `page` events per transaction, each under the community row lock
/// (membership and room writers wait; pods starting at once move each event once), each noted
/// as an access change so every pod's subscribers get the new copies. A second run finds
/// nothing. No function throws.
[[nodiscard]] rekey_result move_to_community_key(pg_connection& connection,
                                                 const protocol::key_pair& relay_key,
                                                 std::int64_t community_id, std::size_t page = 500);

/// Start-up step: lifts a pubkey ban of the community's key or the relay key. A pod of an older
/// comb refused only the relay key, so during a rolling upgrade an admin could ban the
/// community's key through it, and the ban would hide the community's lists and room state from
/// every read. Noted as an access change when one goes. How many went; nothing on a database
/// error (`error` says why).
[[nodiscard]] std::optional<std::size_t> lift_bans_of_own_keys(pg_connection& connection,
                                                               const protocol::key_pair& relay_key,
                                                               std::int64_t community_id,
                                                               std::string& error);

} // namespace comb::storage
