// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>

namespace comb::protocol {

/// The machine-readable prefixes NIP-01 defines for OK and CLOSED messages.
enum class reason {
  invalid,
  duplicate,
  blocked,
  rate_limited,
  auth_required,
  restricted,
  pow,
  error,
  info,
  unsupported, ///< a CLOSED for a filter this relay does not implement (NIP-01's own example)
};

/// The prefix as it appears on the wire, e.g. "rate-limited".
[[nodiscard]] std::string_view prefix_of(reason why) noexcept;

/// Why something from a client was not accepted; `text()` is the full reply message.
struct rejection {
  reason why = reason::invalid;
  std::string detail;

  /// "<prefix>: <detail>", the exact string a client sees.
  [[nodiscard]] std::string text() const;

  friend bool operator==(const rejection&, const rejection&) = default;
};

[[nodiscard]] inline rejection invalid(std::string detail) {
  return {reason::invalid, std::move(detail)};
}

} // namespace comb::protocol
