// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "protocol/event.hpp"
#include "protocol/limits.hpp"
#include "protocol/result.hpp"

namespace comb::storage {

/// An accepted event on its way to the other pods: who accepted it, in which community.
struct bridge_envelope {
  std::string origin;          ///< node id of the pod that accepted the event
  std::int64_t community_id = 0;
  std::shared_ptr<const protocol::event> ev;
  std::shared_ptr<const std::string> event_json; ///< as rendered by the origin, re-rendered here
};

/// Why an envelope was dropped. `unauthenticated`: no MAC, or one not made with our secret
/// (counted apart: it is someone writing on the channel or link who should not).
struct envelope_refusal {
  bool unauthenticated = false;
  std::string why;
};

/// `{"origin":"<node>","community":<id>,"event":<event json>,"mac":"<hex>"}`; the event JSON is
/// spliced in; the MAC is storage::envelope_mac with `secret` (bridge_auth.hpp).
[[nodiscard]] std::string encode_envelope(std::string_view secret, std::string_view origin,
                                          std::int64_t community_id,
                                          const protocol::bytes32& event_id,
                                          std::string_view event_json);

/// Decodes an envelope from the network, which is untrusted: strict shape, bounded size and
/// depth, the MAC checked with `secret` before anything costly, then the event's id and
/// signature verified. Never throws.
[[nodiscard]] protocol::result<bridge_envelope, envelope_refusal>
decode_envelope(std::string_view payload, const protocol::protocol_limits& limits,
                std::string_view secret);

} // namespace comb::storage
