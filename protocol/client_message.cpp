// SPDX-License-Identifier: MIT
#include "protocol/client_message.hpp"

#include <algorithm>
#include <optional>

#include <boost/json.hpp>

#include "protocol/event_json.hpp"
#include "protocol/filter_json.hpp"

namespace comb::protocol {
namespace json = boost::json;
namespace {

using parsed = result<client_message, frame_rejection>;

frame_rejection notice(std::string detail) {
  return {reply_kind::notice, {}, invalid(std::move(detail))};
}

frame_rejection closed(std::string subscription_id, rejection why) {
  return {reply_kind::closed, std::move(subscription_id), std::move(why)};
}

parsed parse_event_frame(const json::array& frame, const protocol_limits& limits, bool is_auth) {
  const char* name = is_auth ? "AUTH" : "EVENT";
  if (frame.size() != 2)
    return notice(std::string(name) + " takes exactly one event");
  auto ev = event_from_json(frame[1], limits);
  if (!ev) {
    if (auto id = declared_event_id(frame[1]))
      return frame_rejection{reply_kind::ok, to_hex(*id), ev.error()};
    return frame_rejection{reply_kind::notice, {}, ev.error()};
  }
  if (is_auth)
    return client_message{auth_message{std::move(ev).value()}};
  return client_message{event_message{std::move(ev).value()}};
}

result<std::string, frame_rejection> parse_subscription_id(const json::value& v,
                                                           const protocol_limits& limits) {
  if (!v.is_string())
    return notice("subscription id must be a string");
  const auto& id = v.get_string();
  if (id.empty() || id.size() > limits.max_subscription_id_bytes)
    return notice("subscription id must be 1 to " + std::to_string(limits.max_subscription_id_bytes)
                  + " bytes");
  return std::string(id);
}

result<std::vector<filter>, frame_rejection>
parse_filters(const json::array& frame, const std::string& sub, const protocol_limits& limits) {
  if (frame.size() < 3)
    return closed(sub, invalid("at least one filter is required"));
  if (frame.size() - 2 > limits.max_filters_per_req)
    return closed(sub, invalid("too many filters"));
  std::vector<filter> filters;
  filters.reserve(frame.size() - 2);
  for (std::size_t i = 2; i < frame.size(); ++i) {
    auto f = filter_from_json(frame[i], limits);
    if (!f)
      return closed(sub, f.error());
    filters.push_back(std::move(f).value());
  }
  return filters;
}

template <class Message>
parsed parse_subscription_frame(const json::array& frame, const protocol_limits& limits) {
  if (frame.size() < 2)
    return notice("missing subscription id");
  auto sub = parse_subscription_id(frame[1], limits);
  if (!sub)
    return sub.error();
  auto filters = parse_filters(frame, sub.value(), limits);
  if (!filters)
    return filters.error();
  return client_message{Message{std::move(sub).value(), std::move(filters).value()}};
}

parsed parse_close_frame(const json::array& frame, const protocol_limits& limits) {
  if (frame.size() != 2)
    return notice("CLOSE takes exactly one subscription id");
  auto sub = parse_subscription_id(frame[1], limits);
  if (!sub)
    return sub.error();
  return client_message{close_message{std::move(sub).value()}};
}

parsed dispatch(const json::array& frame, const protocol_limits& limits) {
  if (frame.empty() || !frame[0].is_string())
    return notice("a message must start with its type as a string");
  std::string_view type = frame[0].get_string();
  if (type == "EVENT")
    return parse_event_frame(frame, limits, false);
  if (type == "REQ")
    return parse_subscription_frame<req_message>(frame, limits);
  if (type == "COUNT")
    return parse_subscription_frame<count_message>(frame, limits);
  if (type == "CLOSE")
    return parse_close_frame(frame, limits);
  if (type == "AUTH")
    return parse_event_frame(frame, limits, true);
  return notice("unknown message type");
}

bool is_lower_hex(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

/// The id an EVENT or AUTH frame that is not valid JSON declares, if it can be read: a client
/// that cut a string inside a character (a lone UTF-16 surrogate, which JavaScript writes) still
/// waits for an OK, and NIP-01 keys appear nowhere else in an event unescaped.
std::optional<std::string> id_in_broken_frame(std::string_view frame) {
  auto type = frame.find_first_not_of(" \t\r\n[");
  if (type == std::string_view::npos
      || !(frame.substr(type).starts_with("\"EVENT\"") || frame.substr(type).starts_with("\"AUTH\"")))
    return std::nullopt;
  // The first "id" followed by a colon is the key ("id" may also be a tag's value).
  for (auto key = frame.find("\"id\""); key != std::string_view::npos; key = frame.find("\"id\"", key + 4)) {
    auto colon = frame.find_first_not_of(" \t\r\n", key + 4);
    if (colon == std::string_view::npos || frame[colon] != ':')
      continue;
    auto quote = frame.find_first_not_of(" \t\r\n", colon + 1);
    if (quote == std::string_view::npos || frame[quote] != '"' || frame.size() < quote + 66 || frame[quote + 65] != '"')
      return std::nullopt;
    auto id = frame.substr(quote + 1, 64);
    return is_lower_hex(id) ? std::optional<std::string>(id) : std::nullopt;
  }
  return std::nullopt;
}

/// The subscription id a REQ or COUNT frame opens with, read without parsing the rest (its
/// second element, a plain string of at most `max_bytes`); nothing otherwise.
std::optional<std::string> subscription_id_at_head(std::string_view frame, std::size_t max_bytes) {
  constexpr std::string_view blanks = " \t\r\n";
  auto skip = [&](std::size_t from) { return std::min(frame.size(), frame.find_first_not_of(blanks, from)); };
  std::size_t at = skip(0);
  if (at == frame.size() || frame[at] != '[')
    return std::nullopt;
  at = skip(at + 1);
  auto head = frame.substr(at);
  std::size_t type_length = head.starts_with("\"REQ\"") ? 5 : head.starts_with("\"COUNT\"") ? 7 : 0;
  if (type_length == 0)
    return std::nullopt;
  at = skip(at + type_length);
  if (at == frame.size() || frame[at] != ',')
    return std::nullopt;
  at = skip(at + 1);
  if (at == frame.size() || frame[at] != '"')
    return std::nullopt;
  auto end = frame.find('"', at + 1);
  if (end == std::string_view::npos || end - at - 1 > max_bytes)
    return std::nullopt;
  auto id = frame.substr(at + 1, end - at - 1);
  // An escape or a control character: only a parse would read it right.
  if (std::any_of(id.begin(), id.end(), [](char c) { return c == '\\' || static_cast<unsigned char>(c) < 0x20; }))
    return std::nullopt;
  return std::string(id);
}

} // namespace

frame_rejection refusal_of_unread(std::string_view frame, rejection why, const protocol_limits& limits) {
  if (auto id = id_in_broken_frame(frame))
    return {reply_kind::ok, std::move(*id), std::move(why)};
  if (auto id = subscription_id_at_head(frame, limits.max_subscription_id_bytes))
    return {reply_kind::closed, std::move(*id), std::move(why)};
  return {reply_kind::notice, {}, std::move(why)};
}

parsed parse_client_message(std::string_view frame, const protocol_limits& limits) {
  if (frame.size() > limits.max_message_bytes)
    return notice("message too large");
  json::parse_options options;
  options.max_depth = limits.max_json_depth;
  boost::system::error_code ec;
  // A monotonic buffer keeps the parse to one or two allocations for typical events.
  unsigned char buffer[4096];
  json::monotonic_resource arena(buffer, sizeof buffer);
  json::value root = json::parse(frame, ec, &arena, options);
  if (ec) {
    if (auto id = id_in_broken_frame(frame))
      return frame_rejection{reply_kind::ok, std::move(*id), invalid("the event is not valid JSON (" + ec.message() + ")")};
    return notice("malformed JSON");
  }
  if (!root.is_array())
    return notice("a message must be a JSON array");
  return dispatch(root.get_array(), limits);
}

} // namespace comb::protocol
