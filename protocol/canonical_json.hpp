// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/event.hpp"

namespace comb::protocol {

/// Appends `text` as a JSON string with NIP-01's escaping: \n \" \\ \r \t \b \f, other control
/// characters as \u00xx, everything else (UTF-8 included) verbatim, exactly as JSON.stringify.
void append_json_string(std::string& out, std::string_view text);

/// `[0,<pubkey>,<created_at>,<kind>,<tags>,<content>]`, the bytes an event id is the hash of.
[[nodiscard]] std::string canonical_serialization(const event& ev);

/// SHA-256 of the canonical serialization.
[[nodiscard]] bytes32 compute_id(const event& ev);

/// The event as a JSON object; rendered once per accepted event and reused for every delivery.
[[nodiscard]] std::string render_event_json(const event& ev);

/// Who wrote an event given as its JSON object, and its id, without parsing the rest: only an
/// object's own key can be followed by `":"` (a quote inside a string is escaped), and an event
/// has no object but itself. Nothing when either is missing or not 64 hex digits.
struct rendered_identity {
  bytes32 id{};
  bytes32 pubkey{};
};
[[nodiscard]] std::optional<rendered_identity> identity_of_rendered(std::string_view json);

} // namespace comb::protocol
