// SPDX-License-Identifier: MIT
#include "conf/ip_network.hpp"

#include <algorithm>
#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace comb::conf {
namespace {

constexpr std::array<std::uint8_t, 12> v4_mapped_prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

} // namespace

bool ip_address::is_v4() const noexcept {
  return std::memcmp(bytes.data(), v4_mapped_prefix.data(), v4_mapped_prefix.size()) == 0;
}

std::string ip_address::text() const {
  char out[INET6_ADDRSTRLEN] = {};
  if (is_v4())
    ::inet_ntop(AF_INET, bytes.data() + 12, out, sizeof out);
  else
    ::inet_ntop(AF_INET6, bytes.data(), out, sizeof out);
  return out;
}

std::string ip_address::budget_key() const {
  if (is_v4())
    return text();
  ip_address network = *this;
  std::fill(network.bytes.begin() + 8, network.bytes.end(), std::uint8_t{0});
  return network.text() + "/64";
}

std::optional<ip_address> parse_ip(std::string_view text) {
  text = trim(text);
  if (text.size() > 2 && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN)
    return std::nullopt;
  std::string terminated(text);
  ip_address out;
  std::uint8_t v4[4];
  if (::inet_pton(AF_INET, terminated.c_str(), v4) == 1) {
    std::memcpy(out.bytes.data(), v4_mapped_prefix.data(), v4_mapped_prefix.size());
    std::memcpy(out.bytes.data() + 12, v4, 4);
    return out;
  }
  if (::inet_pton(AF_INET6, terminated.c_str(), out.bytes.data()) == 1)
    return out;
  return std::nullopt;
}

bool ip_network::contains(const ip_address& address) const noexcept {
  unsigned whole = prefix_bits / 8;
  if (std::memcmp(base.bytes.data(), address.bytes.data(), whole) != 0)
    return false;
  unsigned rest = prefix_bits % 8;
  if (rest == 0)
    return true;
  auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (base.bytes[whole] & mask) == (address.bytes[whole] & mask);
}

std::optional<ip_network> parse_network(std::string_view text) {
  text = trim(text);
  auto slash = text.find('/');
  auto address = parse_ip(text.substr(0, slash));
  if (!address)
    return std::nullopt;
  ip_network out{*address, 128};
  if (slash == std::string_view::npos)
    return out;
  auto digits = text.substr(slash + 1);
  unsigned bits = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
  unsigned family_bits = address->is_v4() ? 32 : 128;
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()
      || bits > family_bits)
    return std::nullopt;
  out.prefix_bits = bits + (128 - family_bits);
  return out;
}

network_list_result parse_networks(const std::vector<std::string>& entries) {
  network_list_result out;
  for (const auto& entry : entries) {
    auto network = parse_network(entry);
    if (!network) {
      out.bad_entry = entry;
      return out;
    }
    out.networks.push_back(*network);
  }
  return out;
}

bool contains_any(const std::vector<ip_network>& networks, const ip_address& address) {
  for (const auto& n : networks)
    if (n.contains(address))
      return true;
  return false;
}

ip_address client_address(const ip_address& peer, std::string_view forwarded_for,
                          std::string_view real_ip, const std::vector<ip_network>& trusted) {
  if (!contains_any(trusted, peer))
    return peer;
  while (!forwarded_for.empty()) {
    auto comma = forwarded_for.rfind(',');
    auto last = comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1);
    forwarded_for = comma == std::string_view::npos ? std::string_view{} : forwarded_for.substr(0, comma);
    auto hop = parse_ip(last);
    if (!hop)
      return peer; // a garbled chain: believe only what we saw
    if (!contains_any(trusted, *hop))
      return *hop;
  }
  if (auto real = parse_ip(real_ip))
    return *real;
  return peer;
}

} // namespace comb::conf
