// SPDX-License-Identifier: MIT
#include "protocol/nip42.hpp"

#include "protocol/host.hpp"
#include "protocol/signature.hpp"

namespace comb::protocol {
namespace {

/// A refused AUTH is `invalid:`, never `auth-required:`: welshman drops every OK false whose
/// message starts with `auth-required:` (it takes them for writes to resend after AUTH), the
/// AUTH's own answer included, so the app would wait for an answer forever and never show why.
rejection auth_failure(std::string detail) {
  return invalid(std::move(detail));
}

} // namespace

std::optional<rejection> check_auth_event(const event& ev, const auth_expectation& expected) {
  if (ev.kind != auth_kind)
    return invalid("AUTH needs an event of kind 22242");
  std::int64_t skew = ev.created_at - expected.now;
  if (skew > expected.max_skew_seconds || skew < -expected.max_skew_seconds)
    return auth_failure("created_at is too far from now");
  const std::string* challenge = first_tag_value(ev, "challenge");
  if (!challenge || *challenge != expected.challenge)
    return auth_failure("challenge does not match");
  const std::string* relay = first_tag_value(ev, "relay");
  if (!relay)
    return auth_failure("missing relay tag");
  auto host = host_of_relay_url(*relay);
  if (!host || *host != expected.host)
    return auth_failure("relay tag names another relay");
  return std::nullopt;
}

std::string make_auth_challenge() {
  std::array<std::uint8_t, 16> bytes{};
  fill_random(bytes);
  return to_hex(bytes);
}

} // namespace comb::protocol
