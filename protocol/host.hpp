// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace comb::protocol {

/// A `Host` header or URL authority made comparable: ASCII lowercase, a trailing dot removed,
/// the default ports 80 and 443 dropped, IPv6 in brackets and canonical form. Nothing when it
/// cannot be a host (see parse_host_port: empty, spaces, a userinfo part, `[zz]`, a bad port).
[[nodiscard]] std::optional<std::string> normalize_host(std::string_view raw);

/// The normalized host of a `ws://` or `wss://` URL (NIP-42's `relay` tag), or nothing.
[[nodiscard]] std::optional<std::string> host_of_relay_url(std::string_view url);

} // namespace comb::protocol
