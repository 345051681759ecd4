// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/limits.hpp"
#include "protocol/result.hpp"
#include "storage/bridge_sequence.hpp"

namespace comb::storage {

/// An accepted event on its way to the other pods: who accepted it, in which community.
struct bridge_envelope {
  std::string origin;          ///< node id of the pod that accepted the event
  std::int64_t community_id = 0;
  /// The community's state version the origin held when it sent the envelope (its member cache,
  /// actors/community/member_cache.hpp): a receiver that holds an older one may not yet know of
  /// a removal the origin applied, so it waits for that version before delivering.
  std::int64_t access_version = 0;
  std::int64_t sent_ms = 0; ///< the origin's clock when it sent the envelope
  /// Its place in the origin's numbering (bridge_sequence.hpp); zero when not numbered.
  envelope_number number;
  /// A heartbeat carries no event: `number.seq` is the last number its origin used.
  bool heartbeat = false;
  std::shared_ptr<const protocol::event> ev; ///< null in a heartbeat
  std::shared_ptr<const std::string> event_json; ///< as rendered by the origin, re-rendered here
  /// A comment's rooms as the origin stored them (actors::live_event::borrowed_rooms); null when
  /// the envelope names none.
  std::shared_ptr<const std::vector<std::string>> borrowed_rooms;
};

/// A node id an envelope may name as its origin: at most this many bytes, printable, as the
/// cluster handshake takes them and the relay's settings allow (`cluster.node_id`). Each origin
/// heard is remembered (bridge_sequence.hpp), so a longer one would pin what a sender chose.
inline constexpr std::size_t max_origin_bytes = 256;

/// Rooms an envelope may name for its comment (a comment names them through its `E` tags).
inline constexpr std::size_t max_envelope_borrowed_rooms = 1024;

/// Why an envelope was dropped. `unauthenticated`: no MAC, or one not made with our secret
/// (counted apart: it is someone writing on the channel or link who should not). `stale`: a
/// valid MAC on an envelope sent too long ago or too far ahead (a replay, or a pod whose clock
/// is off; counted apart too).
struct envelope_refusal {
  bool unauthenticated = false;
  std::string why;
  bool stale = false;
};

/// How far an envelope's send time may be from the receiver's clock, either way. Pods' clocks
/// must agree within it (NTP); a captured envelope replayed later than this is dropped, and
/// within it the fan-out's recent ids drop it as a duplicate.
inline constexpr std::int64_t envelope_max_skew_ms = 60'000;

/// Unix time in milliseconds: an envelope's send time, and the receiver's clock for it.
[[nodiscard]] std::int64_t envelope_clock_ms();

/// Hex characters of the MAC at the head of an envelope.
inline constexpr std::size_t envelope_mac_chars = 64;
/// The largest envelope a pod sends or takes, its MAC included: a relay-written list of a very
/// large community.
inline constexpr std::size_t max_envelope_bytes = 64 * 1024 * 1024;

/// `<MAC hex>{"origin":"<node>","community":<id>,"access":<state version>,"sent":<unix ms>,
/// "event":<event json>}`: the event JSON is spliced in; the MAC is storage::envelope_mac with
/// `secret` over every byte after it (bridge_auth.hpp).
[[nodiscard]] std::string encode_envelope(std::string_view secret, std::string_view origin,
                                          std::int64_t community_id, std::int64_t access_version,
                                          std::string_view event_json,
                                          std::int64_t sent_ms = envelope_clock_ms());

/// The same, numbered in its origin's run: `"boot"` and `"seq"` follow `"sent"`; a comment's
/// rooms (`borrowed_rooms`, at most max_envelope_borrowed_rooms) as `"rooms":[...]` before `"event"`.
[[nodiscard]] std::string encode_numbered_envelope(std::string_view secret, std::string_view origin,
                                                   envelope_number number, std::int64_t community_id,
                                                   std::int64_t access_version,
                                                   std::string_view event_json,
                                                   std::int64_t sent_ms = envelope_clock_ms(),
                                                   const std::vector<std::string>* borrowed_rooms = nullptr);

/// `<MAC hex>{"origin":"<node>","sent":<unix ms>,"boot":<run start ms>,"seq":<last number used>}`:
/// a pod's heartbeat, so that the others notice envelopes they missed of a pod gone quiet.
[[nodiscard]] std::string encode_heartbeat(std::string_view secret, std::string_view origin,
                                           envelope_number last,
                                           std::int64_t sent_ms = envelope_clock_ms());

/// Whether `payload` starts with a MAC made with `secret` over the rest (what decode_envelope
/// checks first): the gatekeeper's test of a peer's envelope before it counts as the peer's.
[[nodiscard]] bool envelope_authentic(std::string_view secret, std::string_view payload);

/// Decodes an envelope from the network, which is untrusted: bounded size, the MAC checked with
/// `secret` before the JSON is parsed, then strict shape and depth, a send time within
/// `envelope_max_skew_ms` of `now_ms`, then the event's id and signature verified. Takes the
/// three shapes above (an envelope of an earlier version has no number). Never throws.
[[nodiscard]] protocol::result<bridge_envelope, envelope_refusal>
decode_envelope(std::string_view payload, const protocol::protocol_limits& limits,
                std::string_view secret, std::int64_t now_ms = envelope_clock_ms());

} // namespace comb::storage
