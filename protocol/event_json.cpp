// SPDX-License-Identifier: MIT
#include "protocol/event_json.hpp"

#include <boost/json.hpp>

namespace comb::protocol {
namespace json = boost::json;
namespace {

constexpr std::string_view field_names[] = {"id", "pubkey", "created_at", "kind",
                                            "tags", "content", "sig"};

std::optional<rejection> check_field_names(const json::object& object) {
  for (const auto& entry : object) {
    bool known = false;
    for (auto name : field_names)
      known = known || entry.key() == name;
    if (!known)
      return invalid("unknown event field");
  }
  for (auto name : field_names)
    if (!object.contains(name))
      return invalid("missing event field " + std::string(name));
  return std::nullopt;
}

/// A JSON integer literal within [low, high]; doubles such as 1.0 or 1e3 are refused.
std::optional<std::int64_t> strict_integer(const json::value& v, std::int64_t low,
                                           std::int64_t high) {
  if (!v.is_int64())
    return std::nullopt;
  std::int64_t n = v.get_int64();
  if (n < low || n > high)
    return std::nullopt;
  return n;
}

template <std::size_t N>
bool hex_field(const json::value& v, std::array<std::uint8_t, N>& out) {
  return v.is_string() && decode_lower_hex(v.get_string(), out);
}

std::optional<rejection> parse_tags(const json::value& v, const protocol_limits& limits,
                                    std::vector<tag>& out) {
  if (!v.is_array())
    return invalid("tags must be an array");
  const auto& tags = v.get_array();
  if (tags.size() > limits.max_tags_per_event)
    return invalid("too many tags");
  out.reserve(tags.size());
  std::size_t elements = 0;
  for (const auto& item : tags) {
    if (!item.is_array() || item.get_array().empty())
      return invalid("each tag must be a non-empty array of strings");
    elements += item.get_array().size();
    if (elements > limits.max_tag_elements_per_event)
      return invalid("too many strings in tags");
    tag& parsed = out.emplace_back();
    parsed.reserve(item.get_array().size());
    for (const auto& element : item.get_array()) {
      if (!element.is_string())
        return invalid("each tag must be a non-empty array of strings");
      if (element.get_string().size() > limits.max_tag_value_bytes)
        return invalid("tag value too long");
      parsed.emplace_back(element.get_string());
    }
  }
  return std::nullopt;
}

} // namespace

result<event> event_from_json(const json::value& value, const protocol_limits& limits) {
  if (!value.is_object())
    return invalid("event must be a JSON object");
  const auto& object = value.get_object();
  if (auto bad = check_field_names(object))
    return *bad;
  event ev;
  if (!hex_field(object.at("id"), ev.id))
    return invalid("id must be 64 lowercase hex characters");
  if (!hex_field(object.at("pubkey"), ev.pubkey))
    return invalid("pubkey must be 64 lowercase hex characters");
  if (!hex_field(object.at("sig"), ev.sig))
    return invalid("sig must be 128 lowercase hex characters");
  auto created_at = strict_integer(object.at("created_at"), 0, INT64_MAX);
  if (!created_at)
    return invalid("created_at must be a non-negative integer");
  ev.created_at = *created_at;
  auto kind = strict_integer(object.at("kind"), 0, 65535);
  if (!kind)
    return invalid("kind must be an integer between 0 and 65535");
  ev.kind = static_cast<std::uint32_t>(*kind);
  if (auto bad = parse_tags(object.at("tags"), limits, ev.tags))
    return *bad;
  const auto& content = object.at("content");
  if (!content.is_string())
    return invalid("content must be a string");
  if (content.get_string().size() > limits.max_content_bytes)
    return invalid("content too long");
  ev.content = content.get_string();
  return ev;
}

std::optional<bytes32> declared_event_id(const json::value& value) noexcept {
  const auto* object = value.if_object();
  if (!object)
    return std::nullopt;
  const auto* id = object->if_contains("id");
  bytes32 out{};
  if (!id || !hex_field(*id, out))
    return std::nullopt;
  return out;
}

} // namespace comb::protocol
