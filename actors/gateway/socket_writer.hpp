// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include <boost/asio/awaitable.hpp>

#include "actors/frame_sink.hpp"
#include "actors/gateway/gathering_stream.hpp"
#include "actors/gateway/websocket_outbox.hpp"

namespace comb::actors {

/// How a connection's frames reach its socket.
enum class frame_writing {
  gathered, ///< framed by the relay, many per write (no extension can be negotiated)
  by_beast, ///< one Beast write per frame (permessage-deflate is offered, so Beast must frame)
};

/// The socket's writer coroutine: writes what the outbox hands out until the connection ends,
/// then closes it with the outbox's reason, or just drops the socket of a reader cut for its
/// unread output (past the outbound bound, or a socket that took nothing for `stall_limit`).
boost::asio::awaitable<void> write_loop(std::shared_ptr<ws_stream> ws,
                                        std::shared_ptr<websocket_outbox> outbox,
                                        frame_writing how, std::chrono::seconds stall_limit);

/// For the log line of a closed connection.
[[nodiscard]] const char* describe(std::optional<close_reason> why);

} // namespace comb::actors
