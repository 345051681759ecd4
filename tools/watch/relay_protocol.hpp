// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/event.hpp"
#include "protocol/limits.hpp"
#include "protocol/signature.hpp"

namespace comb::watch {

/// Where the watcher connects; only ws:// (TLS is left to a local proxy or a later version).
struct relay_endpoint {
  std::string url;        ///< as given, used verbatim in the NIP-42 `relay` tag
  std::string host;       ///< host name (lowercase) or address to resolve, IPv6 without brackets
  std::string port;       ///< "80" when the URL names none
  std::string authority;  ///< the Host header: host[:port], IPv6 in brackets
  std::string target = "/";  ///< comb serves a community at its host's root
  std::string community;  ///< normalized host, the ledger's community name
};

/// Nothing when `url` is not a ws:// URL with a valid host and at most a trailing "/" (the form
/// NIP-42's `relay` tag must take).
[[nodiscard]] std::optional<relay_endpoint> parse_relay_url(std::string_view url);

/// A frame from the relay, reduced to the fields the watcher uses.
struct relay_frame {
  enum class type { event, eose, closed, notice, ok, auth, other };
  type kind = type::other;
  std::string subscription;  ///< EVENT, EOSE, CLOSED
  std::string text;          ///< challenge (AUTH), message (OK, CLOSED, NOTICE), event id (OK)
  bool accepted = false;     ///< OK
  std::optional<protocol::event> ev;  ///< EVENT, when the event is well-formed
};

/// Member lists are large (about 75 bytes per member), so the watcher reads far bigger events
/// than a relay accepts from clients.
[[nodiscard]] protocol::protocol_limits relay_frame_limits();

/// Nothing for a frame that is not a JSON array starting with a string.
[[nodiscard]] std::optional<relay_frame> parse_relay_frame(std::string_view text);

/// A frame carrying a signed event, and that event's id (to match the relay's OK).
struct signed_frame {
  std::string frame;
  std::string event_id;
};

/// `["AUTH", <kind-22242 event>]` answering `challenge` for `relay_url`, signed by `key`.
[[nodiscard]] signed_frame render_auth_frame(const protocol::key_pair& key,
                                            std::string_view relay_url,
                                            std::string_view challenge,
                                            std::int64_t now_unix);

/// `["REQ", sub, {"kinds":[kind],"authors":[author], ...extra}]`; `since` and `limit` when set.
[[nodiscard]] std::string render_req(std::string_view subscription, std::uint32_t kind,
                                     std::string_view author, std::optional<std::int64_t> since,
                                     std::optional<std::int64_t> limit);

[[nodiscard]] std::string render_close(std::string_view subscription);

/// The `self` field of a NIP-11 document, when it is a 64-character hex key.
[[nodiscard]] std::optional<std::string> relay_pubkey_from_info(std::string_view document);

} // namespace comb::watch
