// SPDX-License-Identifier: MIT
#include "storage/bridge_envelope.hpp"

#include <boost/json.hpp>

#include "protocol/canonical_json.hpp"
#include "storage/bridge_auth.hpp"
#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"

namespace comb::storage {
namespace json = boost::json;

std::string encode_envelope(std::string_view secret, std::string_view origin,
                            std::int64_t community_id, const protocol::bytes32& event_id,
                            std::string_view event_json) {
  std::string out;
  out.reserve(event_json.size() + origin.size() + 128);
  out += "{\"origin\":";
  protocol::append_json_string(out, origin);
  out += ",\"community\":";
  out += std::to_string(community_id);
  out += ",\"event\":";
  out += event_json;
  out += ",\"mac\":\"";
  out += envelope_mac(secret, origin, community_id, event_id);
  out += "\"}";
  return out;
}

namespace {

envelope_refusal malformed(std::string why) {
  return {false, std::move(why)};
}

} // namespace

protocol::result<bridge_envelope, envelope_refusal>
decode_envelope(std::string_view payload, const protocol::protocol_limits& limits,
                std::string_view secret) {
  // Relay-written lists of large communities exceed what clients may send; pods trust each
  // other's size, not each other's content (the signature is still checked).
  if (payload.size() > 64 * 1024 * 1024)
    return malformed("envelope too large");
  json::parse_options options;
  options.max_depth = limits.max_json_depth;
  boost::system::error_code ec;
  json::value root = json::parse(payload, ec, {}, options);
  if (ec || !root.is_object())
    return malformed("envelope is not a JSON object");
  const auto& object = root.get_object();
  const auto* origin = object.if_contains("origin");
  const auto* community = object.if_contains("community");
  const auto* event = object.if_contains("event");
  const auto* mac = object.if_contains("mac");
  if (!origin || !origin->is_string() || !community || !community->is_int64() || !event)
    return malformed("envelope needs origin, community and event");
  if (!mac || !mac->is_string() || object.size() != 4)
    return envelope_refusal{true, "envelope without a MAC"};
  auto ev = protocol::event_from_json(*event, limits);
  if (!ev)
    return malformed(ev.error().text());
  if (!envelope_mac_matches(secret, origin->get_string(), community->get_int64(), ev.value().id,
                            mac->get_string()))
    return envelope_refusal{true, "envelope MAC does not match (another secret, or forged)"};
  if (auto bad = protocol::verify_event(ev.value()))
    return malformed(bad->text());
  bridge_envelope out;
  out.origin = std::string(origin->get_string());
  out.community_id = community->get_int64();
  auto shared = std::make_shared<const protocol::event>(std::move(ev).value());
  out.event_json = std::make_shared<const std::string>(protocol::render_event_json(*shared));
  out.ev = std::move(shared);
  return out;
}

} // namespace comb::storage
