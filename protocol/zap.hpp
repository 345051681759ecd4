// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "protocol/event.hpp"

namespace comb::protocol {

inline constexpr std::uint32_t zap_request_kind = 9734;
inline constexpr std::uint32_t zap_receipt_kind = 9735;

/// A zap request older than this does not vouch for a receipt: Lightning invoices expire within
/// hours, and an old request seen in a community must not admit receipts forged from it for good.
inline constexpr std::int64_t max_zap_request_age_seconds = 86400;

/// NIP-57: who a zap receipt (9735) is from, as its `description` tag says. The receipt is
/// published by the payee's Lightning service, which never authenticates; what the relay can
/// check is the zap request (9734) inside it: a well-formed event with a valid id and signature,
/// naming `host` among its `relays`, made at most max_zap_request_age_seconds before `now` (and
/// not after it by more than a few minutes), and a receipt that is only that request's: empty
/// content, NIP-57's tags alone, the same `p`, `e` and `a`, `P` the request's author if present.
/// Nothing when any of that fails; never throws. (One request may still vouch for several
/// receipts of the same zap: the relay cannot tell a paid invoice from a forged one.)
[[nodiscard]] std::optional<bytes32> zap_sender(const event& receipt, std::string_view host,
                                                std::int64_t now);

/// zap_sender for a receipt from an archive of another relay (comb-admin import): its request
/// names that relay, and was made when it was paid, so neither is checked; the rest is.
[[nodiscard]] std::optional<bytes32> archived_zap_sender(const event& receipt);

} // namespace comb::protocol
