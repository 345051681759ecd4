// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace comb::conf {

/// An IPv4 or IPv6 address as 16 bytes; IPv4 is held as ::ffff:a.b.c.d, so one comparison
/// serves both families and "10.0.0.1" equals "::ffff:10.0.0.1".
struct ip_address {
  std::array<std::uint8_t, 16> bytes{};

  [[nodiscard]] bool is_v4() const noexcept;

  /// "192.0.2.1" or "2001:db8::1" (canonical text).
  [[nodiscard]] std::string text() const;

  /// The key of per-address bounds: an IPv4 address itself, an IPv6 address's /64 ("2001:db8::/64").
  /// One IPv6 subscriber is handed a /64 and may use any address in it: keyed per address, one
  /// client would have 2^64 budgets.
  [[nodiscard]] std::string budget_key() const;

  friend bool operator==(const ip_address&, const ip_address&) = default;
};

/// A literal address ("192.0.2.1", "2001:db8::1", "[2001:db8::1]"), or nothing.
[[nodiscard]] std::optional<ip_address> parse_ip(std::string_view text);

/// An address block: an address with the number of leading bits that must match.
struct ip_network {
  ip_address base;
  unsigned prefix_bits = 128; ///< out of 128 (an IPv4 /24 is held as /120)

  [[nodiscard]] bool contains(const ip_address& address) const noexcept;
};

/// "10.0.0.0/8", "2001:db8::/32", or a plain address (a block of one).
[[nodiscard]] std::optional<ip_network> parse_network(std::string_view text);

/// Every entry of a list such as COMB_TRUSTED_PROXIES, or the first entry that is not one.
struct network_list_result {
  std::vector<ip_network> networks;
  std::string bad_entry; ///< empty when every entry parsed
};

[[nodiscard]] network_list_result parse_networks(const std::vector<std::string>& entries);

[[nodiscard]] bool contains_any(const std::vector<ip_network>& networks, const ip_address& address);

/// Who a request comes from. The socket peer, unless the peer is a trusted proxy: then the
/// rightmost X-Forwarded-For entry that is not itself a trusted proxy (entries to its left were
/// written by the client and prove nothing), else X-Real-IP, else the peer.
[[nodiscard]] ip_address client_address(const ip_address& peer, std::string_view forwarded_for,
                                        std::string_view real_ip,
                                        const std::vector<ip_network>& trusted);

} // namespace comb::conf
