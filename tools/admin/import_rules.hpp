// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "protocol/event.hpp"
#include "protocol/event_check.hpp"
#include "protocol/limits.hpp"
#include "protocol/result.hpp"

namespace comb::admin {

// Which lines of a JSONL import become stored events. Each check is the relay's own (protocol/),
// applied in the order a client's EVENT meets them; what only a live connection has (rates,
// AUTH state) has no counterpart in a file.

/// The relay's settings an imported event is held to.
struct import_policy {
  protocol::protocol_limits limits;
  protocol::created_at_window created_at;
  std::size_t max_deletion_targets = 100;
  bool check_signatures = true; ///< off only for a file the operator trusts
};

/// Why a line is not stored. `reason` is a short key the summary counts by; `bad_line` marks a
/// line that is not a valid event at all (reported with its number; --strict stops on it), as
/// opposed to a valid event the rules keep out.
struct line_refusal {
  std::string reason;
  std::string message;
  bool bad_line = false;
};

/// One line of the file as an event, through the relay's frame parser (size, depth, shape), or
/// the reason it is not one.
[[nodiscard]] protocol::result<protocol::event, line_refusal>
read_event_line(std::string_view line, const import_policy& policy);

/// The rules a client's EVENT meets, for an event from a file: never AUTH, relay-signed kinds
/// or requests that act on state (those speak for a moment and a relay that are gone);
/// ephemeral kinds are not stored; deletions within their bound; not expired; created_at within
/// the window; the author admitted (`admitted` null: anyone); id and signature. Replacement,
/// deletions and bans are the storage writer's (storage/store_plan.cpp).
[[nodiscard]] std::optional<line_refusal>
import_refusal(const protocol::event& ev, std::int64_t now, const import_policy& policy,
               const std::set<protocol::bytes32>* admitted);

} // namespace comb::admin
