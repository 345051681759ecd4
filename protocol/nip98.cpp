// SPDX-License-Identifier: MIT
#include "protocol/nip98.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <boost/json.hpp>

#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"
#include "protocol/host.hpp"
#include "protocol/limits.hpp"
#include "protocol/sha256.hpp"

namespace comb::protocol {
namespace {

rejection refused(std::string detail) {
  return {reason::auth_required, std::move(detail)};
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x))
                  == std::tolower(static_cast<unsigned char>(y));
         });
}

/// The event inside the header, shape-checked; signature not yet.
result<event> event_of_header(std::string_view authorization) {
  if (authorization.empty())
    return refused("missing Authorization header");
  if (authorization.size() > max_http_auth_bytes)
    return refused("Authorization header is too large");
  constexpr std::string_view scheme = "Nostr ";
  if (authorization.size() <= scheme.size()
      || !iequals(authorization.substr(0, scheme.size()), scheme))
    return refused("Authorization must use the Nostr scheme (NIP-98)");
  auto decoded = decode_base64(authorization.substr(scheme.size()));
  if (!decoded)
    return refused("Authorization is not base64");
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 8;
  auto json = boost::json::parse(*decoded, ec, {}, options);
  if (ec)
    return refused("Authorization does not hold a JSON event");
  protocol_limits limits;
  limits.max_tags_per_event = 64;
  limits.max_tag_value_bytes = 4096;
  limits.max_content_bytes = 4096;
  auto ev = event_from_json(json, limits);
  if (!ev)
    return refused("bad auth event: " + ev.error().detail);
  return ev;
}

std::optional<rejection> check_tags(const event& ev, const http_auth_expectation& expected) {
  const std::string* url = first_tag_value(ev, "u");
  if (!url)
    return refused("auth event has no u tag");
  auto host = host_of_any_url(*url);
  if (!host || *host != expected.host)
    return refused("u tag does not name this relay");
  const std::string* method = first_tag_value(ev, "method");
  if (!method || !iequals(*method, expected.method))
    return refused("method tag must be " + expected.method);
  const std::string* payload = first_tag_value(ev, "payload");
  if (!payload)
    return refused("auth event has no payload tag");
  if (*payload != to_hex(sha256(expected.body)))
    return refused("payload tag does not match the request body");
  return std::nullopt;
}

} // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  while (!text.empty() && text.back() == '=')
    text.remove_suffix(1);
  if (text.size() % 4 == 1)
    return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int value = base64_value(c);
    if (value < 0)
      return std::nullopt;
    buffer = (buffer << 6) | static_cast<std::uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

std::optional<std::string> host_of_any_url(std::string_view url) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 4> schemes{{
    {"https://", "wss://"}, {"http://", "ws://"}, {"wss://", "wss://"}, {"ws://", "ws://"}}};
  for (const auto& [from, to] : schemes)
    if (url.size() > from.size() && iequals(url.substr(0, from.size()), from))
      return host_of_relay_url(std::string(to) + std::string(url.substr(from.size())));
  return std::nullopt;
}

result<event> check_http_auth(std::string_view authorization,
                              const http_auth_expectation& expected) {
  auto ev = event_of_header(authorization);
  if (!ev)
    return ev;
  if (ev->kind != http_auth_kind)
    return refused("auth event must be of kind 27235");
  std::int64_t skew = ev->created_at - expected.now;
  if (skew > expected.max_skew_seconds || skew < -expected.max_skew_seconds)
    return refused("auth event created_at is too far from now");
  if (auto bad = check_tags(ev.value(), expected))
    return *bad;
  if (auto bad = verify_event(ev.value()))
    return refused("bad auth event: " + bad->detail);
  return ev;
}

} // namespace comb::protocol
