// SPDX-License-Identifier: MIT
#include "protocol/event.hpp"

#include <charconv>

namespace comb::protocol {

kind_class classify(std::uint32_t kind) noexcept {
  if (kind == 0 || kind == 3 || (kind >= 10000 && kind < 20000))
    return kind_class::replaceable;
  if (kind >= 20000 && kind < 30000)
    return kind_class::ephemeral;
  if (kind >= 30000 && kind < 40000)
    return kind_class::addressable;
  return kind_class::regular;
}

bool has_address(std::uint32_t kind) noexcept {
  auto kinds = classify(kind);
  return kinds == kind_class::replaceable || kinds == kind_class::addressable;
}

std::size_t parsed_bytes(const event& ev) noexcept {
  auto text = [](const std::string& s) { return sizeof s + (s.size() > 15 ? s.size() : 0); };
  std::size_t bytes = sizeof ev + text(ev.content) - sizeof ev.content;
  for (const auto& t : ev.tags) {
    bytes += sizeof t;
    for (const auto& element : t)
      bytes += text(element);
  }
  return bytes;
}

const std::string* first_tag_value(const event& ev, std::string_view name) noexcept {
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == name)
      return &t[1];
  return nullptr;
}

std::string_view d_tag(const event& ev) noexcept {
  const std::string* value = first_tag_value(ev, "d");
  return value ? std::string_view(*value) : std::string_view();
}

bool is_protected(const event& ev) noexcept {
  for (const auto& t : ev.tags)
    if (!t.empty() && t[0] == "-")
      return true;
  return false;
}

std::optional<std::int64_t> expiration_of(const event& ev) noexcept {
  const std::string* value = first_tag_value(ev, "expiration");
  if (!value || value->empty())
    return std::nullopt;
  std::int64_t when = 0;
  const char* end = value->data() + value->size();
  auto [ptr, ec] = std::from_chars(value->data(), end, when);
  if (ec != std::errc() || ptr != end || when < 0)
    return std::nullopt;
  return when;
}

bool has_expired(const event& ev, std::int64_t now) noexcept {
  auto when = expiration_of(ev);
  return when && *when <= now;
}

std::string address_of(const event& ev) {
  std::string out = std::to_string(ev.kind);
  out += ':';
  append_hex(out, ev.pubkey);
  out += ':';
  out += d_tag(ev);
  return out;
}

std::optional<address_value> parse_address_value(std::string_view value) noexcept {
  const auto colon = value.find(':');
  if (colon == std::string_view::npos || value.size() < colon + 66 || value[colon + 65] != ':')
    return std::nullopt;
  address_value out;
  auto [end, ec] = std::from_chars(value.data(), value.data() + colon, out.kind);
  if (ec != std::errc() || end != value.data() + colon || !decode_lower_hex(value.substr(colon + 1, 64), out.pubkey))
    return std::nullopt;
  out.d = value.substr(colon + 66);
  return out;
}

} // namespace comb::protocol
