// SPDX-License-Identifier: MIT
// What a client frame costs from the connection's and the address's buckets, and the one reply
// to a frame refused (by the buckets, or because it does not parse).
#pragma once

#include <cstddef>
#include <string>

#include "actors/connection/connection_actor.hpp"
#include "protocol/client_message.hpp"

namespace comb::actors {

using parse_result = protocol::result<protocol::client_message, protocol::frame_rejection>;

/// Sends a refusal as its frame's type asks: OK false, CLOSED (ending the subscription of that
/// id), or NOTICE.
void send_refusal(connection_self self, const protocol::frame_rejection& r);

/// A frame that does not parse: counted as invalid, answered as its parse said.
void reply_to_rejected_frame(connection_self self, const protocol::frame_rejection& r);

/// Frames of 16 KiB or more are paid for before they are parsed, so a refused one is never
/// parsed (it is answered from a scan of its head, protocol::refusal_of_unread); false when it
/// is refused. `paid`: the tokens it took.
[[nodiscard]] bool charge_before_parsing(connection_self self, const std::string& text, double& paid);

/// Takes what a parsed frame costs beyond `paid`; false (and its refusal sent) when the buckets
/// lack it. A CLOSE of an open subscription is never refused: it only frees what the client holds.
[[nodiscard]] bool charge_parsed(connection_self self, std::size_t bytes, const parse_result& parsed, double paid);

} // namespace comb::actors
