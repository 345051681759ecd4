// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "actors/community/membership_requests.hpp"
#include "protocol/room_rules.hpp"

namespace comb::actors {

/// The OK a room request (9000-9022) gets for its outcome, with NIP-29's `duplicate:` for the
/// join of a member.
[[nodiscard]] membership_reply room_reply_for(std::uint32_t kind, protocol::room_outcome outcome);

} // namespace comb::actors
