// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <caf/all.hpp>
#include <memory>
#include <string>

#include "actors/community/community_registry.hpp"
#include "actors/connection/frame_ledger.hpp"
#include "actors/connection/ip_table.hpp"
#include "actors/gateway/gateway_context.hpp"
#include "actors/gateway/gathering_stream.hpp"
#include "actors/gateway/websocket_outbox.hpp"
#include "actors/metrics.hpp"
#include "storage/community_store.hpp"

namespace comb::actors {

/// One upgraded connection: its socket, its outbox and the connection actor behind it.
struct websocket_session {
  std::string peer;
  std::string client; ///< the client's address: the peer, or what a trusted proxy forwarded
  std::shared_ptr<ws_stream> ws;
  std::shared_ptr<websocket_outbox> outbox;
  caf::actor actor;
  std::shared_ptr<frame_ledger> frames_pending;
};

/// Wraps an accepted stream whose upgrade is about to be answered: the WebSocket settings, an
/// outbox bounded per connection and per pod (a reader past it is cut), ping limits, and the
/// connection actor with the community's policy.
[[nodiscard]] websocket_session open_session(boost::beast::tcp_stream stream, gateway_context& context,
                                             const storage::community_row& community,
                                             const community_handle& handle,
                                             std::shared_ptr<ip_budget> budget);

/// Bytes read and not yet handled by the actors: for one connection, and over the pod
/// (relay_metrics::inbound_frame_bytes).
struct inbound_bounds {
  std::size_t connection = 1024 * 1024;
  std::size_t pod = 256ULL * 1024 * 1024;
};

/// Waits while the bytes handed to the actor and not yet handled are at `bounds.connection` or
/// more, or those of every connection at `bounds.pod`: the socket stops reading, so a flood
/// queues in the clients' TCP windows, not in our memory. False once the connection is closing
/// (its actor failed with bytes unhandled: they never will be).
boost::asio::awaitable<bool> wait_for_actor(std::atomic<std::size_t>& pending, inbound_bounds bounds,
                                            const websocket_outbox& outbox, relay_metrics& metrics);

/// Reads messages and hands each to the session's actor until the socket ends. It stops
/// reading while the actor, or the pod, holds `inbound` unhandled, and a message left
/// unfinished counts in `pod_partial`, bounded by `max_pod_partial` over every connection.
boost::asio::awaitable<void> read_loop(websocket_session& session, relay_metrics& metrics,
                                       inbound_bounds inbound,
                                       std::atomic<std::size_t>& pod_partial,
                                       std::size_t max_pod_partial);

} // namespace comb::actors
