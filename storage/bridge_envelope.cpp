// SPDX-License-Identifier: MIT
#include "storage/bridge_envelope.hpp"

#include <boost/json.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"

namespace comb::storage {
namespace json = boost::json;

std::string encode_envelope(std::string_view origin, std::int64_t community_id,
                            std::string_view event_json) {
  std::string out;
  out.reserve(event_json.size() + origin.size() + 48);
  out += "{\"origin\":";
  protocol::append_json_string(out, origin);
  out += ",\"community\":";
  out += std::to_string(community_id);
  out += ",\"event\":";
  out += event_json;
  out += '}';
  return out;
}

protocol::result<bridge_envelope> decode_envelope(std::string_view payload,
                                                  const protocol::protocol_limits& limits) {
  // Relay-written lists of large communities exceed what clients may send; pods trust each
  // other's size, not each other's content (the signature is still checked).
  if (payload.size() > 64 * 1024 * 1024)
    return protocol::invalid("envelope too large");
  json::parse_options options;
  options.max_depth = limits.max_json_depth;
  boost::system::error_code ec;
  json::value root = json::parse(payload, ec, {}, options);
  if (ec || !root.is_object())
    return protocol::invalid("envelope is not a JSON object");
  const auto& object = root.get_object();
  const auto* origin = object.if_contains("origin");
  const auto* community = object.if_contains("community");
  const auto* event = object.if_contains("event");
  if (!origin || !origin->is_string() || !community || !community->is_int64() || !event
      || object.size() != 3)
    return protocol::invalid("envelope needs origin, community and event");
  auto ev = protocol::event_from_json(*event, limits);
  if (!ev)
    return ev.error();
  if (auto bad = protocol::verify_event(ev.value()))
    return *bad;
  bridge_envelope out;
  out.origin = std::string(origin->get_string());
  out.community_id = community->get_int64();
  auto shared = std::make_shared<const protocol::event>(std::move(ev).value());
  out.event_json = std::make_shared<const std::string>(protocol::render_event_json(*shared));
  out.ev = std::move(shared);
  return out;
}

} // namespace comb::storage
