// SPDX-License-Identifier: MIT
#include "storage/bridge_envelope.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <optional>

#include "protocol/canonical_json.hpp"
#include "storage/bridge_auth.hpp"
#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"
#include "protocol/room.hpp"

namespace comb::storage {
namespace json = boost::json;

std::int64_t envelope_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

namespace {

bool printable_origin(std::string_view origin) {
  return !origin.empty() && origin.size() <= max_origin_bytes
         && std::ranges::all_of(origin, [](char c) { return c > ' ' && c < 0x7f; });
}

/// The MAC's place, then `{"origin":"<node>"`: the head every shape shares.
std::string envelope_head(std::string_view origin, std::size_t rest_bytes) {
  std::string out(envelope_mac_chars, '0'); // filled once the body is written (sealed)
  out.reserve(envelope_mac_chars + rest_bytes + origin.size() + 128);
  out += "{\"origin\":";
  protocol::append_json_string(out, origin);
  return out;
}

void append_number(std::string& out, envelope_number number) {
  out += ",\"boot\":";
  out += std::to_string(number.boot_ms);
  out += ",\"seq\":";
  out += std::to_string(number.seq);
}

std::string sealed(std::string out, std::string_view secret) {
  out += '}';
  const auto mac = envelope_mac(secret, std::string_view(out).substr(envelope_mac_chars));
  out.replace(0, envelope_mac_chars, mac);
  return out;
}

void append_rooms(std::string& out, const std::vector<std::string>& rooms) {
  out += ",\"rooms\":[";
  for (std::size_t i = 0; i < rooms.size(); ++i) {
    if (i > 0)
      out += ',';
    out += json::serialize(json::string_view(rooms[i]));
  }
  out += ']';
}

std::string event_envelope(std::string_view secret, std::string_view origin,
                           const envelope_number* number, std::int64_t community_id,
                           std::int64_t access_version, std::string_view event_json,
                           std::int64_t sent_ms, const std::vector<std::string>* borrowed_rooms = nullptr) {
  auto out = envelope_head(origin, event_json.size());
  out += ",\"community\":";
  out += std::to_string(community_id);
  out += ",\"access\":";
  out += std::to_string(access_version);
  out += ",\"sent\":";
  out += std::to_string(sent_ms);
  if (number)
    append_number(out, *number);
  if (borrowed_rooms && borrowed_rooms->size() <= max_envelope_borrowed_rooms)
    append_rooms(out, *borrowed_rooms);
  out += ",\"event\":";
  out += event_json;
  return sealed(std::move(out), secret);
}

} // namespace

std::string encode_envelope(std::string_view secret, std::string_view origin,
                            std::int64_t community_id, std::int64_t access_version,
                            std::string_view event_json, std::int64_t sent_ms) {
  return event_envelope(secret, origin, nullptr, community_id, access_version, event_json, sent_ms);
}

std::string encode_numbered_envelope(std::string_view secret, std::string_view origin,
                                     envelope_number number, std::int64_t community_id,
                                     std::int64_t access_version, std::string_view event_json,
                                     std::int64_t sent_ms, const std::vector<std::string>* borrowed_rooms) {
  return event_envelope(secret, origin, &number, community_id, access_version, event_json, sent_ms,
                        borrowed_rooms);
}

std::string encode_heartbeat(std::string_view secret, std::string_view origin,
                             envelope_number last, std::int64_t sent_ms) {
  auto out = envelope_head(origin, 0);
  out += ",\"sent\":";
  out += std::to_string(sent_ms);
  append_number(out, last);
  return sealed(std::move(out), secret);
}

namespace {

envelope_refusal malformed(std::string why) {
  return {false, std::move(why), false};
}

/// Why an authenticated envelope is too old or too new to deliver, if it is: sent further from
/// now than the skew, either way (a difference that overflows is never within).
std::optional<std::string> stale(std::int64_t sent_ms, std::int64_t now_ms) {
  std::int64_t age = 0;
  if (!__builtin_sub_overflow(now_ms, sent_ms, &age) && age <= envelope_max_skew_ms
      && age >= -envelope_max_skew_ms)
    return std::nullopt;
  const char* when = sent_ms < now_ms ? "too long ago" : "ahead of this pod's clock";
  return std::string("envelope sent ") + when
         + " (a replay, or the pods' clocks differ by more than "
         + std::to_string(envelope_max_skew_ms / 1000) + " s)";
}

struct read_number {
  envelope_number value;
  bool seq_given = false;
};

/// `boot` and `seq`, both or neither (an envelope of an earlier version); nothing when they are
/// there but not whole numbers, or only one is.
std::optional<read_number> number_of(const json::object& object) {
  const auto* boot = object.if_contains("boot");
  const auto* seq = object.if_contains("seq");
  if (!boot && !seq)
    return read_number{};
  if (!boot || !seq || !boot->is_int64() || !seq->is_int64() || seq->get_int64() < 0)
    return std::nullopt;
  return read_number{{boot->get_int64(), static_cast<std::uint64_t>(seq->get_int64())}, true};
}

/// `"rooms"`: room ids, at most max_envelope_borrowed_rooms; nothing when it is not that.
std::optional<std::vector<std::string>> rooms_of(const json::value& value) {
  if (!value.is_array() || value.get_array().size() > max_envelope_borrowed_rooms)
    return std::nullopt;
  std::vector<std::string> rooms;
  for (const auto& room : value.get_array()) {
    if (!room.is_string() || !protocol::valid_room_id(room.get_string()))
      return std::nullopt;
    rooms.emplace_back(room.get_string());
  }
  return rooms;
}

} // namespace

bool envelope_authentic(std::string_view secret, std::string_view payload) {
  return payload.size() > envelope_mac_chars
         && envelope_mac_matches(secret, payload.substr(envelope_mac_chars),
                                 payload.substr(0, envelope_mac_chars));
}

protocol::result<bridge_envelope, envelope_refusal>
decode_envelope(std::string_view payload, const protocol::protocol_limits& limits,
                std::string_view secret, std::int64_t now_ms) {
  // Relay-written lists of large communities exceed what clients may send; pods trust each
  // other's size, not each other's content (the signature is still checked).
  if (payload.size() > max_envelope_bytes)
    return malformed("envelope too large");
  // The MAC first, over the bytes: a stranger's payload is never parsed (a JSON document can
  // take many times its size in memory).
  if (!envelope_authentic(secret, payload))
    return envelope_refusal{true, "envelope MAC does not match (none, another secret, or forged)",
                            false};
  json::parse_options options;
  options.max_depth = limits.max_json_depth;
  boost::system::error_code ec;
  json::value root = json::parse(payload.substr(envelope_mac_chars), ec, {}, options);
  if (ec || !root.is_object())
    return malformed("envelope is not a JSON object");
  const auto& object = root.get_object();
  const auto* origin = object.if_contains("origin");
  const auto* sent = object.if_contains("sent");
  if (!origin || !origin->is_string() || !sent || !sent->is_int64())
    return malformed("envelope needs origin and sent");
  if (!printable_origin(origin->get_string()))
    return malformed("envelope's origin must be 1 to " + std::to_string(max_origin_bytes)
                     + " printable characters");
  auto number = number_of(object);
  if (!number)
    return malformed("envelope's boot and seq must be whole numbers, seq not negative");
  const std::int64_t sent_ms = sent->get_int64();
  if (!object.contains("event") && number->seq_given && object.size() == 4) {
    if (auto why = stale(sent_ms, now_ms))
      return envelope_refusal{false, std::move(*why), true};
    bridge_envelope beat;
    beat.origin = std::string(origin->get_string());
    beat.sent_ms = sent_ms;
    beat.number = number->value;
    beat.heartbeat = true;
    return beat;
  }
  const auto* community = object.if_contains("community");
  const auto* access = object.if_contains("access");
  const auto* event = object.if_contains("event");
  const auto* rooms = object.if_contains("rooms");
  if (!community || !community->is_int64() || !access || !access->is_int64() || !event
      || object.size() != (number->seq_given ? 7U : 5U) + (rooms ? 1U : 0U))
    return malformed("envelope needs origin, community, access, sent, event (and boot and seq,"
                     " or neither; rooms or not), and nothing else");
  auto borrowed_rooms = rooms ? rooms_of(*rooms) : std::nullopt;
  if (rooms && !borrowed_rooms)
    return malformed("envelope's rooms must be at most " + std::to_string(max_envelope_borrowed_rooms)
                     + " room ids");
  auto ev = protocol::event_from_json(*event, limits);
  if (!ev)
    return malformed(ev.error().text());
  if (auto why = stale(sent_ms, now_ms))
    return envelope_refusal{false, std::move(*why), true};
  if (auto bad = protocol::verify_event(ev.value()))
    return malformed(bad->text());
  // Rooms an event borrows never outrank its own signed `h`: a sender's unsigned list could
  // otherwise show a hidden room's post to every reader.
  if (borrowed_rooms && (!protocol::may_carry_borrowed_rooms(ev.value().kind) || protocol::room_of(ev.value())))
    return malformed("envelope's rooms are only for an event that borrows its rooms");
  bridge_envelope out;
  out.origin = std::string(origin->get_string());
  out.community_id = community->get_int64();
  out.access_version = access->get_int64();
  out.sent_ms = sent_ms;
  out.number = number->value;
  if (borrowed_rooms)
    out.borrowed_rooms = std::make_shared<const std::vector<std::string>>(std::move(*borrowed_rooms));
  auto shared = std::make_shared<const protocol::event>(std::move(ev).value());
  out.event_json = std::make_shared<const std::string>(protocol::render_event_json(*shared));
  out.ev = std::move(shared);
  return out;
}

} // namespace comb::storage
