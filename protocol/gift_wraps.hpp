// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/filter.hpp"
#include "protocol/rejection.hpp"

namespace comb::protocol {

/// NIP-59's gift wraps, stored and ephemeral. Their authors are one-time keys; who they are for
/// is their `p` tag, which is all a reader could learn from them.
inline constexpr std::uint32_t gift_wrap_kind = 1059;
inline constexpr std::uint32_t ephemeral_gift_wrap_kind = 21059;

[[nodiscard]] bool is_gift_wrap_kind(std::uint32_t kind) noexcept;

/// THE rule for reading gift wraps (NIP-17: served only to the user they are addressed to, known
/// by NIP-42 AUTH). A filter whose `#p` names only `reader` reads them as it asks; a filter
/// that names a gift wrap kind otherwise is refused, `auth-required:` for an anonymous reader
/// (welshman then authenticates and asks again), `restricted:` for another; any other filter
/// is narrowed to match no gift wrap (`filter::gift_wraps_hidden`), history, COUNT and live.
[[nodiscard]] std::optional<rejection> guard_gift_wraps(std::vector<filter>& filters,
                                                        const std::optional<bytes32>& reader);

} // namespace comb::protocol
