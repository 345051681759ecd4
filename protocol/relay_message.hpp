// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/hex.hpp"

namespace comb::protocol {

/// `["EVENT",<sub>,<event json>]`; the event JSON is rendered once and spliced in as is.
[[nodiscard]] std::string render_event_frame(std::string_view subscription_id,
                                             std::string_view event_json);

/// `["EVENT",<sub>,`: what render_event_frame puts before the event JSON (then `]` follows it),
/// for frames built around a stored or shared event JSON (history rows as read; live frames
/// that share one JSON among subscribers).
[[nodiscard]] std::string event_frame_prefix(std::string_view subscription_id);

[[nodiscard]] std::string render_ok(std::string_view event_id_hex,
                                    bool accepted,
                                    std::string_view message);

[[nodiscard]] std::string render_ok(const bytes32& event_id, bool accepted, std::string_view message);

[[nodiscard]] std::string render_eose(std::string_view subscription_id);

[[nodiscard]] std::string render_closed(std::string_view subscription_id, std::string_view message);

[[nodiscard]] std::string render_notice(std::string_view message);

[[nodiscard]] std::string render_auth_challenge(std::string_view challenge);

/// NIP-45's answer; `approximate`: more events match than were counted.
[[nodiscard]] std::string render_count(std::string_view subscription_id, std::uint64_t count,
                                       bool approximate = false);

} // namespace comb::protocol
