// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"

namespace comb::storage {

class pg_connection;

/// The channel every pod LISTENs on; one notification per committed change of what access
/// checks read (members, roles, bans, access, archive, hosts, deletion).
inline constexpr std::string_view access_channel = "comb_access";

/// At most this many event ids travel in a notification (a payload must stay under 8000
/// bytes); a transaction that wrote more says so, and receivers load them another way.
inline constexpr std::size_t max_noted_ids = 100;

/// One notification as a pod receives it.
struct access_notice {
  std::int64_t community_id = 0;
  std::int64_t version = 0;             ///< the community's state version after the change
  std::vector<protocol::bytes32> ids;   ///< events the transaction wrote (13534, 8000/8001, ...)
  bool more_ids = false;                ///< it wrote more events than `ids` names
};

/// THE call every write path that changes what access checks read makes, inside its open
/// transaction, after its writes and before COMMIT: bumps the community's state version and
/// raises the notification (Postgres delivers it only if the transaction commits). `written`
/// names the events the transaction stored that subscribers should see live (the new list,
/// deltas, role definitions); empty when it wrote none (access, archive, hosts, bans).
/// Returns the new version; nothing when the community row does not exist; throws nothing
/// and reports a database error in `error` (then the caller must roll back).
[[nodiscard]] std::optional<std::int64_t> note_access_change(pg_connection& tx,
                                                             std::int64_t community_id,
                                                             const std::vector<protocol::bytes32>& written,
                                                             std::string& error);

/// The notification text for a change (exposed for tests).
[[nodiscard]] std::string access_payload_suffix(const std::vector<protocol::bytes32>& written);

/// Reads a notification payload; nothing if it is not one of ours.
[[nodiscard]] std::optional<access_notice> parse_access_notice(std::string_view payload);

} // namespace comb::storage
