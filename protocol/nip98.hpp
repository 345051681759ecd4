// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/event.hpp"
#include "protocol/result.hpp"

namespace comb::protocol {

inline constexpr std::uint32_t http_auth_kind = 27235;

/// The largest `Authorization` value read; a kind 27235 event with its few tags is far smaller.
inline constexpr std::size_t max_http_auth_bytes = 8 * 1024;

/// What a NIP-98 event must prove for one HTTP request.
struct http_auth_expectation {
  /// The normalized host the request was made to; `u` must name it (http, https, ws or wss).
  std::string host;
  std::string method = "POST";
  /// The request body; the `payload` tag must be its SHA-256 in hex (NIP-86 requires it).
  std::string_view body;
  std::int64_t now = 0;
  /// created_at may differ from `now` by at most this many seconds either way.
  std::int64_t max_skew_seconds = 60;
};

/// Checks an `Authorization: Nostr <base64 event>` header value: the event's shape, kind,
/// created_at, `u`, `method` and `payload` tags, then its id and signature. Returns the verified
/// event (its pubkey is the caller), or why it is refused (reason `auth_required`).
[[nodiscard]] result<event> check_http_auth(std::string_view authorization,
                                            const http_auth_expectation& expected);

/// The normalized host of an absolute `http`, `https`, `ws` or `wss` URL whose path is empty or
/// "/", or nothing.
[[nodiscard]] std::optional<std::string> host_of_any_url(std::string_view url);

/// Standard or URL-safe base64, padding optional; nothing when it is not base64.
[[nodiscard]] std::optional<std::string> decode_base64(std::string_view text);

} // namespace comb::protocol
