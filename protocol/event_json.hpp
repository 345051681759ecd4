// SPDX-License-Identifier: MIT
#pragma once

#include <boost/json/value.hpp>

#include "protocol/event.hpp"
#include "protocol/limits.hpp"
#include "protocol/result.hpp"

namespace comb::protocol {

/// Strict parse of an event object: exactly the seven NIP-01 fields, 64-character lowercase hex
/// id and pubkey, 128-character sig, non-negative integer created_at, kind in 0..65535, tags as
/// non-empty arrays of strings, string content. Checks shape only; see `verify_event` for the id
/// and signature.
[[nodiscard]] result<event> event_from_json(const boost::json::value& json,
                                            const protocol_limits& limits);

/// The `id` field of a would-be event object if it is well-formed hex, so a rejection can be
/// answered with OK rather than NOTICE.
[[nodiscard]] std::optional<bytes32> declared_event_id(const boost::json::value& json) noexcept;

} // namespace comb::protocol
