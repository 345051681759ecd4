// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>

#include "protocol/event.hpp"
#include "protocol/rejection.hpp"

namespace comb::protocol {

/// The id is the hash of the canonical serialization and the signature verifies against the
/// pubkey. The expensive check: run it off the I/O threads.
[[nodiscard]] std::optional<rejection> verify_event(const event& ev);

/// How far created_at may stray from the relay's clock. Zero means "no bound".
struct created_at_window {
  std::int64_t max_seconds_ahead = 15 * 60;
  std::int64_t max_seconds_behind = 0;
};

[[nodiscard]] std::optional<rejection> check_created_at(const event& ev,
                                                        std::int64_t now,
                                                        const created_at_window& window);

} // namespace comb::protocol
