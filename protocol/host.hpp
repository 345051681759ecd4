// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace comb::protocol {

/// A `Host` header or URL authority made comparable: ASCII lowercase, a trailing dot removed,
/// the default ports 80 and 443 dropped, IPv6 in brackets and canonical form. Nothing when it
/// cannot be a host (see parse_host_port: empty, spaces, a userinfo part, `[zz]`, a bad port).
[[nodiscard]] std::optional<std::string> normalize_host(std::string_view raw);

/// Whether a `Host` header may reach a listener meant for this machine and its private network
/// (metrics): none (no browser leaves it out), an IP address, a name of one label (`localhost`, a compose service), a name under
/// a suffix no one can register publicly (`.localhost`, `.local`, `.internal`, `.home.arpa`,
/// `.svc`), or one of `also` (its port not compared). A page a browser loaded from a public
/// name then pointed at this machine (DNS rebinding) names that public name, and is refused.
[[nodiscard]] bool private_host(std::string_view raw, std::span<const std::string> also);

/// The normalized host of a `ws://` or `wss://` URL (NIP-42's `relay` tag), or nothing.
[[nodiscard]] std::optional<std::string> host_of_relay_url(std::string_view url);

} // namespace comb::protocol
