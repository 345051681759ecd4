// SPDX-License-Identifier: MIT
#include "protocol/relay_message.hpp"

#include "protocol/canonical_json.hpp"

namespace comb::protocol {
namespace {

/// `["<type>","<first>"` without the closing bracket.
std::string open_frame(std::string_view type, std::string_view first, std::size_t extra) {
  std::string out;
  out.reserve(type.size() + first.size() + extra + 8);
  out += "[\"";
  out += type;
  out += "\",";
  append_json_string(out, first);
  return out;
}

} // namespace

std::string render_event_frame(std::string_view subscription_id, std::string_view event_json) {
  std::string out = open_frame("EVENT", subscription_id, event_json.size());
  out += ',';
  out += event_json;
  out += ']';
  return out;
}

std::string event_frame_prefix(std::string_view subscription_id) {
  std::string out = open_frame("EVENT", subscription_id, 1);
  out += ',';
  return out;
}

std::string render_ok(std::string_view event_id_hex, bool accepted, std::string_view message) {
  std::string out = open_frame("OK", event_id_hex, message.size() + 8);
  out += accepted ? ",true," : ",false,";
  append_json_string(out, message);
  out += ']';
  return out;
}

std::string render_ok(const bytes32& event_id, bool accepted, std::string_view message) {
  return render_ok(to_hex(event_id), accepted, message);
}

std::string render_eose(std::string_view subscription_id) {
  std::string out = open_frame("EOSE", subscription_id, 1);
  out += ']';
  return out;
}

std::string render_closed(std::string_view subscription_id, std::string_view message) {
  std::string out = open_frame("CLOSED", subscription_id, message.size() + 4);
  out += ',';
  append_json_string(out, message);
  out += ']';
  return out;
}

std::string render_notice(std::string_view message) {
  std::string out = open_frame("NOTICE", message, 1);
  out += ']';
  return out;
}

std::string render_auth_challenge(std::string_view challenge) {
  std::string out = open_frame("AUTH", challenge, 1);
  out += ']';
  return out;
}

std::string render_count(std::string_view subscription_id, std::uint64_t count, bool approximate) {
  std::string out = open_frame("COUNT", subscription_id, 48);
  out += ",{\"count\":";
  out += std::to_string(count);
  if (approximate)
    out += ",\"approximate\":true";
  out += "}]";
  return out;
}

} // namespace comb::protocol
