// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>

#include "actors/messages.hpp"

namespace comb::actors {

/// A stored event's JSON, read back from this pod's own database, as a live event for the
/// fan-out; nothing for a row that does not parse (it is skipped, never trusted blindly: the
/// limits are only wider, for relay-written lists of large communities).
[[nodiscard]] std::optional<live_event> live_from_stored(std::string raw);

} // namespace comb::actors
