// SPDX-License-Identifier: MIT
#include "tools/watch/relay_protocol.hpp"

#include <boost/json.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/event_json.hpp"
#include "protocol/address.hpp"
#include "protocol/host.hpp"
#include "protocol/nip42.hpp"
#include "tools/watch/ledger.hpp"

namespace comb::watch {
namespace json = boost::json;
namespace {

std::optional<boost::json::value> parse_json(std::string_view text) {
  json::parse_options options;
  options.max_depth = 16;
  boost::system::error_code error;
  auto value = json::parse(text, error, {}, options);
  if (error)
    return std::nullopt;
  return value;
}

std::string string_at(const json::array& frame, std::size_t i) {
  if (i >= frame.size() || !frame[i].is_string())
    return {};
  return std::string(frame[i].get_string());
}

relay_frame::type type_named(std::string_view name) {
  using t = relay_frame::type;
  if (name == "EVENT")
    return t::event;
  if (name == "EOSE")
    return t::eose;
  if (name == "CLOSED")
    return t::closed;
  if (name == "NOTICE")
    return t::notice;
  if (name == "OK")
    return t::ok;
  if (name == "AUTH")
    return t::auth;
  return t::other;
}

} // namespace

std::optional<relay_endpoint> parse_relay_url(std::string_view url) {
  auto community = protocol::host_of_relay_url(url);
  auto parsed = protocol::parse_url(url);
  if (!community || !parsed || parsed->scheme != "ws")
    return std::nullopt;
  relay_endpoint out;
  out.url = std::string(url);
  out.community = *community;
  out.host = parsed->where.host;
  out.port = std::to_string(parsed->where.port.value_or(80));
  out.authority = parsed->where.authority();
  return out;
}

protocol::protocol_limits relay_frame_limits() {
  protocol::protocol_limits limits;
  limits.max_message_bytes = 64 * 1024 * 1024;
  limits.max_tags_per_event = 1'000'000;
  limits.max_content_bytes = 16 * 1024 * 1024;
  return limits;
}

std::optional<relay_frame> parse_relay_frame(std::string_view text) {
  auto value = parse_json(text);
  if (!value || !value->is_array() || value->get_array().empty()
      || !value->get_array()[0].is_string())
    return std::nullopt;
  const auto& frame = value->get_array();
  relay_frame out;
  out.kind = type_named(frame[0].get_string());
  switch (out.kind) {
  case relay_frame::type::event:
    out.subscription = string_at(frame, 1);
    if (frame.size() == 3)
      if (auto ev = protocol::event_from_json(frame[2], relay_frame_limits()))
        out.ev = std::move(ev).value();
    break;
  case relay_frame::type::eose:
    out.subscription = string_at(frame, 1);
    break;
  case relay_frame::type::closed:
    out.subscription = string_at(frame, 1);
    out.text = string_at(frame, 2);
    break;
  case relay_frame::type::ok:
    out.text = string_at(frame, 1);
    out.accepted = frame.size() > 2 && frame[2].is_bool() && frame[2].get_bool();
    break;
  case relay_frame::type::notice:
  case relay_frame::type::auth:
    out.text = string_at(frame, 1);
    break;
  case relay_frame::type::other:
    break;
  }
  return out;
}

signed_frame render_auth_frame(const protocol::key_pair& key, std::string_view relay_url,
                               std::string_view challenge, std::int64_t now_unix) {
  protocol::event ev;
  ev.pubkey = key.public_key();
  ev.created_at = now_unix;
  ev.kind = protocol::auth_kind;
  ev.tags = {{"relay", std::string(relay_url)}, {"challenge", std::string(challenge)}};
  ev.id = protocol::compute_id(ev);
  ev.sig = key.sign(ev.id);
  return {"[\"AUTH\"," + protocol::render_event_json(ev) + "]", protocol::to_hex(ev.id)};
}

std::string render_req(std::string_view subscription, std::uint32_t kind, std::string_view author,
                       std::optional<std::int64_t> since, std::optional<std::int64_t> limit) {
  json::object filter;
  filter["kinds"] = json::array{kind};
  filter["authors"] = json::array{json::string(author)};
  if (since)
    filter["since"] = *since;
  if (limit)
    filter["limit"] = *limit;
  return json::serialize(json::array{"REQ", json::string(subscription), std::move(filter)});
}

std::string render_close(std::string_view subscription) {
  return json::serialize(json::array{"CLOSE", json::string(subscription)});
}

std::optional<std::string> relay_pubkey_from_info(std::string_view document) {
  auto value = parse_json(document);
  if (!value || !value->is_object())
    return std::nullopt;
  const auto* self = value->get_object().if_contains("self");
  if (!self || !self->is_string() || !is_pubkey_hex(self->get_string()))
    return std::nullopt;
  return std::string(self->get_string());
}

} // namespace comb::watch
