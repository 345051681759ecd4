// SPDX-License-Identifier: MIT
#include "protocol/canonical_json.hpp"

#include <charconv>

#include "protocol/hex.hpp"
#include "protocol/sha256.hpp"

namespace comb::protocol {
namespace {

void append_integer(std::string& out, std::int64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void append_tags(std::string& out, const std::vector<tag>& tags) {
  out += '[';
  for (std::size_t i = 0; i < tags.size(); ++i) {
    if (i)
      out += ',';
    out += '[';
    for (std::size_t j = 0; j < tags[i].size(); ++j) {
      if (j)
        out += ',';
      append_json_string(out, tags[i][j]);
    }
    out += ']';
  }
  out += ']';
}

std::size_t estimated_size(const event& ev) {
  std::size_t size = ev.content.size() + 256;
  for (const auto& t : ev.tags)
    for (const auto& v : t)
      size += v.size() + 4;
  return size;
}

} // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex_digits[] = "0123456789abcdef";
  out += '"';
  std::size_t run_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    out.append(text.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += hex_digits[c >> 4];
        out += hex_digits[c & 0x0f];
    }
  }
  out.append(text.data() + run_start, text.size() - run_start);
  out += '"';
}

std::string canonical_serialization(const event& ev) {
  std::string out;
  out.reserve(estimated_size(ev));
  out += "[0,\"";
  append_hex(out, ev.pubkey);
  out += "\",";
  append_integer(out, ev.created_at);
  out += ',';
  append_integer(out, ev.kind);
  out += ',';
  append_tags(out, ev.tags);
  out += ',';
  append_json_string(out, ev.content);
  out += ']';
  return out;
}

bytes32 compute_id(const event& ev) {
  return sha256(canonical_serialization(ev));
}

std::string render_event_json(const event& ev) {
  std::string out;
  out.reserve(estimated_size(ev) + 200);
  out += "{\"id\":\"";
  append_hex(out, ev.id);
  out += "\",\"pubkey\":\"";
  append_hex(out, ev.pubkey);
  out += "\",\"created_at\":";
  append_integer(out, ev.created_at);
  out += ",\"kind\":";
  append_integer(out, ev.kind);
  out += ",\"tags\":";
  append_tags(out, ev.tags);
  out += ",\"content\":";
  append_json_string(out, ev.content);
  out += ",\"sig\":\"";
  append_hex(out, ev.sig);
  out += "\"}";
  return out;
}

namespace {

std::optional<bytes32> hex_value_of(std::string_view json, std::string_view key) {
  auto at = json.find(key);
  if (at == std::string_view::npos || json.size() - at - key.size() < 64)
    return std::nullopt;
  return array_from_hex<32>(json.substr(at + key.size(), 64));
}

} // namespace

std::optional<rendered_identity> identity_of_rendered(std::string_view json) {
  auto id = hex_value_of(json, "\"id\":\"");
  auto pubkey = hex_value_of(json, "\"pubkey\":\"");
  if (!id || !pubkey)
    return std::nullopt;
  return rendered_identity{*id, *pubkey};
}

} // namespace comb::protocol
