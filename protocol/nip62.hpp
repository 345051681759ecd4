// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/gift_wraps.hpp" // gift_wrap_kind: a request to vanish deletes those addressed to its author
#include "protocol/rejection.hpp"

namespace comb::protocol {

/// NIP-62: a request to vanish asks the relays its `relay` tags name to delete every event of
/// its author up to its created_at, and to refuse them ever after.
inline constexpr std::uint32_t vanish_kind = 62;


/// The `relay` value of a request to vanish meant for every relay.
inline constexpr std::string_view all_relays = "ALL_RELAYS";

/// The relays a request to vanish names: every one (a `relay` tag of ALL_RELAYS), or the
/// normalized hosts of its `relay` URLs (sorted, each once; a value that is no relay URL names
/// none).
struct vanish_reach {
  bool all_relays = false;
  std::vector<std::string> hosts;
};

[[nodiscard]] vanish_reach reach_of_vanish_request(const event& ev);

/// Whether a request to vanish names the relay at `host` (normalized, as NIP-42's relay tag
/// is checked): a `relay` tag of that host, or ALL_RELAYS. Otherwise the `invalid:` refusal.
[[nodiscard]] std::optional<rejection> check_vanish_request(const event& ev, std::string_view host);

} // namespace comb::protocol
