// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/event.hpp"
#include "protocol/rejection.hpp"

namespace comb::protocol {

inline constexpr std::uint32_t auth_kind = 22242;

/// What a NIP-42 AUTH event must prove for this connection.
struct auth_expectation {
  std::string challenge;
  /// The normalized host the connection was made to; the `relay` tag must name it.
  std::string host;
  std::int64_t now = 0;
  /// created_at may differ from `now` by at most this many seconds either way.
  std::int64_t max_skew_seconds = 600;
};

/// Checks kind, challenge tag, relay tag and time. The id and signature are checked separately
/// by `verify_event`, which must also pass.
[[nodiscard]] std::optional<rejection> check_auth_event(const event& ev,
                                                        const auth_expectation& expected);

/// A fresh challenge: 16 random bytes as hex.
[[nodiscard]] std::string make_auth_challenge();

} // namespace comb::protocol
