// SPDX-License-Identifier: MIT
#include "admin/import_rules.hpp"

#include <algorithm>
#include <variant>

#include "protocol/canonical_json.hpp"
#include "protocol/client_message.hpp"
#include "protocol/gift_wraps.hpp"
#include "protocol/hex.hpp"
#include "protocol/kind_rules.hpp"
#include "protocol/nip42.hpp"
#include "protocol/nip62.hpp"
#include "protocol/room.hpp"
#include "protocol/zap.hpp"

namespace comb::admin {
namespace {

line_refusal bad_line(std::string reason, std::string message) {
  return {std::move(reason), std::move(message), true};
}

line_refusal refused(std::string reason, std::string message) {
  return {std::move(reason), std::move(message), false};
}

std::optional<line_refusal> kind_refusal(const protocol::event& ev) {
  if (ev.kind == protocol::auth_kind)
    return refused("auth", "AUTH events are never stored");
  if (protocol::relay_only_kind(ev.kind))
    return refused("relay_signed", "kind " + std::to_string(ev.kind)
                                     + " is only the relay's; this one writes its own");
  if (protocol::state_request_kind(ev.kind))
    return refused("state_request", "kind " + std::to_string(ev.kind)
                                      + " is a request that acts on state, not replayed");
  if (protocol::classify(ev.kind) == protocol::kind_class::ephemeral)
    return refused("ephemeral", "ephemeral events are not stored");
  return std::nullopt;
}

} // namespace

protocol::result<protocol::event, line_refusal> read_event_line(std::string_view line,
                                                                const import_policy& policy) {
  if (line.size() > policy.limits.max_message_bytes)
    return bad_line("too_large", "line longer than the relay's message bound ("
                                   + std::to_string(policy.limits.max_message_bytes) + " bytes)");
  // The relay's own frame parser, so a line passes exactly when the same event in an EVENT
  // frame would.
  std::string frame;
  frame.reserve(line.size() + 11);
  frame.append("[\"EVENT\",").append(line).append("]");
  auto parsed = protocol::parse_client_message(frame, policy.limits);
  if (!parsed)
    return bad_line("invalid", parsed.error().why.text());
  auto* message = std::get_if<protocol::event_message>(&parsed.value());
  if (!message)
    return bad_line("invalid", "invalid: not one event object");
  return std::move(message->ev);
}

namespace {

/// Events a member's, though another key signs them: a gift wrap (a throwaway key) addressed to
/// a member (a file does not say who published it, where a connection admits one only from an
/// authenticated member), a zap receipt (the payee's Lightning service) of a member's zap. Members would lose their messages and zaps in a move otherwise.
bool stored_for_member(const protocol::event& ev, const std::set<protocol::bytes32>& admitted) {
  if (ev.kind == protocol::gift_wrap_kind)
    return std::any_of(ev.tags.begin(), ev.tags.end(), [&](const protocol::tag& tag) {
      auto key = tag.size() >= 2 && tag[0] == "p" ? protocol::array_from_hex<32>(tag[1]) : std::nullopt;
      return key && admitted.contains(*key);
    });
  auto sender = protocol::archived_zap_sender(ev);
  return sender && admitted.contains(*sender);
}

} // namespace

std::optional<line_refusal> import_refusal(const protocol::event& ev, std::int64_t now,
                                           const import_policy& policy,
                                           const std::set<protocol::bytes32>* admitted) {
  if (auto by_kind = kind_refusal(ev))
    return by_kind;
  if (ev.kind == 5 && protocol::deletion_targets(ev) > policy.max_deletion_targets)
    return refused("too_many_deletion_targets",
                   "a deletion may name at most " + std::to_string(policy.max_deletion_targets)
                     + " events");
  if (auto too_many = protocol::too_many_rooms(ev))
    return refused("too_many_rooms", *too_many);
  if (auto expires = protocol::expiration_of(ev); expires && *expires <= now)
    return refused("expired", "event has already expired");
  if (auto bad_time = protocol::check_created_at(ev, now, policy.created_at))
    return refused("created_at", bad_time->text());
  // NIP-62: a request to vanish is carried out whatever its author's standing.
  if (admitted && ev.kind != protocol::vanish_kind && !admitted->contains(ev.pubkey) && !stored_for_member(ev, *admitted))
    return refused("not_a_member", "the author is not a member of this closed community");
  if (policy.check_signatures) {
    if (auto bad = protocol::verify_event(ev))
      return bad_line("bad_signature", bad->text());
  } else if (protocol::compute_id(ev) != ev.id) {
    // Even a trusted file must not store an event under an id that is not its own.
    return bad_line("bad_id", "invalid: event id does not match its content");
  }
  return std::nullopt;
}

} // namespace comb::admin
