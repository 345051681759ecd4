// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
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

/// How long the ids a change wrote stay in `noted_events`: a pod that lost notifications (its
/// LISTEN connection was down) delivers what it missed when it catches up, if within this time.
inline constexpr std::chrono::seconds noted_events_kept{3600};

/// At most this many written events are read (and held) at once while a pod delivers them.
inline constexpr int noted_events_page = 100;

/// One notification as a pod receives it: "<community> <version>[ +]".
struct access_notice {
  std::int64_t community_id = 0;
  std::int64_t version = 0;   ///< the community's state version after the change
  bool wrote_events = false;  ///< " +": the change wrote events, kept in `noted_events`
};

/// THE call every write path that changes what access checks read makes, inside its open
/// transaction, after its writes and before COMMIT: bumps the community's state version,
/// records `written` under that version in `noted_events` (every id, in order, so other pods
/// load them by version however many there are) and raises the notification (Postgres delivers
/// it only if the transaction commits). `written` names the events the transaction stored that
/// subscribers should see live (the new list, deltas, role definitions, room state); empty when
/// it wrote none (access, archive, hosts, bans). Also prunes this community's rows older than
/// `noted_events_kept`. Returns the new version; nothing when the community row does not exist;
/// throws nothing and reports a database error in `error` (then the caller must roll back).
[[nodiscard]] std::optional<std::int64_t> note_access_change(pg_connection& tx,
                                                             std::int64_t community_id,
                                                             const std::vector<protocol::bytes32>& written,
                                                             std::string& error);

/// Reads a notification payload; nothing if it is not one of ours.
[[nodiscard]] std::optional<access_notice> parse_access_notice(std::string_view payload);

/// Where a reader of `noted_events` stands: after event `position` of `version`.
struct noted_position {
  std::int64_t version = 0;
  std::int64_t position = 0;
};

/// One event a change wrote, as stored.
struct noted_event {
  noted_position at;
  std::string raw;
};

/// The events recorded after `after` up to version `through` (inclusive), in version order and
/// in the order each change wrote them, at most `limit`; events deleted or replaced since are
/// skipped. Nothing on a database error.
[[nodiscard]] std::optional<std::vector<noted_event>>
load_noted_events(pg_connection& connection, std::int64_t community_id, noted_position after,
                  std::int64_t through, int limit = noted_events_page);

} // namespace comb::storage
