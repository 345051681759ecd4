// SPDX-License-Identifier: MIT
#include "protocol/event_check.hpp"

#include "protocol/canonical_json.hpp"
#include "protocol/signature.hpp"

namespace comb::protocol {

std::optional<rejection> verify_event(const event& ev) {
  if (compute_id(ev) != ev.id)
    return invalid("event id does not match its content");
  if (!verify_schnorr(ev.pubkey, ev.id, ev.sig))
    return invalid("signature verification failed");
  return std::nullopt;
}

std::optional<rejection> check_created_at(const event& ev,
                                          std::int64_t now,
                                          const created_at_window& window) {
  if (window.max_seconds_ahead > 0 && ev.created_at > now + window.max_seconds_ahead)
    return invalid("created_at is too far in the future");
  if (window.max_seconds_behind > 0 && ev.created_at < now - window.max_seconds_behind)
    return invalid("created_at is too far in the past");
  return std::nullopt;
}

} // namespace comb::protocol
