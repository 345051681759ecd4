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

/// `{"origin":"<node>","community":<id>,"event":<event json>}`; the event JSON is spliced in.
[[nodiscard]] std::string encode_envelope(std::string_view origin, std::int64_t community_id,
                                          std::string_view event_json);

/// Decodes an envelope from the network, which is untrusted: strict shape, bounded size and
/// depth, and the event's id and signature verified. Never throws.
[[nodiscard]] protocol::result<bridge_envelope> decode_envelope(std::string_view payload,
                                                                const protocol::protocol_limits& limits);

} // namespace comb::storage
