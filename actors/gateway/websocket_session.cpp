// SPDX-License-Identifier: MIT
// A WebSocket connection once upgraded: its socket settings, outbox and connection actor, and
// the loop that hands each message to the actor, bounded by what the actor has not handled yet.
#include "actors/gateway/websocket_session.hpp"

#include <algorithm>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "actors/clock.hpp"
#include "actors/connection/connection_actor.hpp"
#include "actors/connection/rate_limiter.hpp"
#include "actors/gateway/partial_message.hpp"
#include "actors/messages.hpp"
#include "protocol/nip42.hpp"

namespace comb::actors {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp_stream = beast::tcp_stream;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

/// What one read of a message may add to its buffer at most (a whole typical event).
constexpr std::size_t read_chunk_bytes = 16 * 1024;

/// What a message's first read may add: no more than a std::string holds without allocating.
/// Beast sets aside the room a read asks for before any byte arrives, so a connection waiting
/// for its next message would otherwise hold that room the whole time it is idle.
constexpr std::size_t first_read_bytes = 15;

/// What its second read may add: with the first, as much as Beast's own frame buffer holds, the
/// room one read of a message always set aside uncounted. A message no longer than that never
/// touches the pod's count of partial bytes, whoever fills it.
constexpr std::size_t second_read_bytes = 1536 - first_read_bytes;

/// The room a message's read sets aside, by how many reads it has had.
constexpr std::size_t read_room(std::size_t reads) {
  return reads == 0 ? first_read_bytes : reads == 1 ? second_read_bytes : read_chunk_bytes;
}

connection_policy policy_for(const gateway_context& context, const storage::community_row& c,
                             const community_handle& handle) {
  const auto& s = context.settings;
  connection_policy policy;
  policy.community_id = c.id;
  policy.host = c.host;
  policy.closed_community = c.closed;
  policy.members = handle.members;
  policy.bans = handle.bans;
  policy.vanish_requests = context.vanish_requests;
  policy.relay_url = (s.effective_public_url().starts_with("wss://") ? "wss://" : "ws://") + c.host;
  policy.limits = s.limits;
  policy.created_at = s.created_at;
  policy.event_rate = s.event_rate;
  policy.event_burst = s.event_burst;
  policy.max_events_in_flight = s.max_events_in_flight;
  policy.frame_rate = s.frame_rate;
  policy.frame_burst = s.frame_burst;
  policy.auth_cost = s.auth_cost;
  policy.max_filters = s.max_open_filters;
  policy.max_filter_values = s.max_open_filter_values;
  policy.max_filter_value_bytes = s.max_open_filter_bytes;
  policy.max_broad_filters = s.max_broad_filters;
  policy.max_broad_filters_per_address = s.max_broad_filters_per_ip;
  policy.max_filters_per_address = s.max_filters_per_ip;
  policy.max_filter_values_per_address = s.max_filter_values_per_ip;
  policy.pod_filters = context.pod_filters;
  // Each held event goes to the socket's queue with what a queued frame holds beyond its bytes.
  policy.max_buffered_live_bytes_per_connection = held_live_bytes_within(
    s.max_outbound_bytes,
    s.max_history_bytes + policy.max_buffered_live_per_connection * outbound_frame::held_overhead(),
    policy.max_buffered_live_bytes_per_connection);
  policy.max_buffered_live_bytes = std::min(policy.max_buffered_live_bytes, policy.max_buffered_live_bytes_per_connection);
  policy.max_queries_in_flight = s.max_queries_in_flight;
  policy.max_deletion_targets = s.max_deletion_targets;
  policy.room_late_seconds = s.room_late_seconds;
  return policy;
}

void configure(ws_stream& ws, const conf::relay_settings& s) {
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = std::chrono::seconds(s.upgrade_timeout_seconds);
  timeouts.idle_timeout = std::chrono::seconds(s.idle_timeout_seconds);
  timeouts.keep_alive_pings = true;
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator(
    [](websocket::response_type& response) { response.set(http::field::server, "comb"); }));
  ws.read_message_max(s.limits.max_message_bytes);
  websocket::permessage_deflate deflate;
  deflate.server_enable = s.deflate;
  deflate.server_max_window_bits = s.deflate_window_bits;
  deflate.client_max_window_bits = s.deflate_window_bits;
  deflate.memLevel = s.deflate_mem_level;
  ws.set_option(deflate);
}



/// Pings one connection may send at once, and per second after that: a client's keep-alive
/// sends one every few seconds.
constexpr double ping_burst = 200;
constexpr double ping_rate = 20;

/// Beast answers every ping with a write of its own, before the relay sees any frame: a
/// connection pinging past its own ping bucket is cut. Each ping also takes a frame token of its
/// client address when there is one, so a flood over many connections slows that address's
/// other frames, but never cuts a connection that did not flood (its neighbours behind the same
/// NAT may have spent the address's tokens).
void limit_pings(ws_stream& ws, std::shared_ptr<ip_budget> budget, std::shared_ptr<relay_metrics> metrics) {
  auto* socket = &beast::get_lowest_layer(ws).socket();
  ws.control_callback([budget = std::move(budget), metrics = std::move(metrics), socket,
                       pings = rate_limiter(ping_rate, ping_burst)](websocket::frame_type kind,
                                                                     beast::string_view) mutable {
    if (kind != websocket::frame_type::ping)
      return;
    double now = monotonic_seconds();
    if (budget)
      (void)budget->try_take_frames(now, 1);
    if (pings.try_take(now))
      return;
    bump(metrics->pings_refused);
    // On the strand, inside the read that parsed the ping: the read and every write fail now.
    boost::system::error_code ignored;
    socket->close(ignored);
  });
}

} // namespace

asio::awaitable<bool> wait_for_actor(std::atomic<std::size_t>& pending, inbound_bounds bounds,
                                     const websocket_outbox& outbox, relay_metrics& metrics) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  // Each wait twice the last, up to 64 ms: ten thousand paused sockets must not add a storm of
  // wake-ups to the load that paused them.
  auto wait = std::chrono::milliseconds(2);
  bool counted = false;
  for (;;) {
    const bool own = pending.load(std::memory_order_acquire) >= bounds.connection;
    const bool pod = metrics.inbound_frame_bytes.load(std::memory_order_acquire) >= bounds.pod;
    if (!own && !pod)
      co_return true;
    if (pod && !std::exchange(counted, true))
      bump(metrics.inbound_pod_pauses);
    if (outbox.closing())
      co_return false;
    pause.expires_after(wait);
    co_await pause.async_wait(use_tuple);
    wait = std::min(wait * 2, std::chrono::milliseconds(64));
  }
}

websocket_session open_session(tcp_stream stream, gateway_context& context,
                               const storage::community_row& community,
                               const community_handle& handle, std::shared_ptr<ip_budget> budget) {
  websocket_session session;
  boost::system::error_code peer_gone; // the peer may already have left; the log says 0.0.0.0
  auto remote = stream.socket().remote_endpoint(peer_gone);
  session.peer = remote.address().to_string() + ":" + std::to_string(remote.port());
  auto executor = stream.get_executor();
  session.ws = std::make_shared<ws_stream>(std::move(stream));
  configure(*session.ws, context.settings);
  const auto& s = context.settings;
  session.outbox = std::make_shared<websocket_outbox>(
    executor, s.max_outbound_bytes, context.metrics, s.max_pod_outbound_bytes,
    websocket_outbox::pod_share(s.max_pod_outbound_bytes, s.max_connections));
  // A reader past the bound is cut at once: closing the socket aborts the write that its full
  // buffer holds up, and with it the session.
  std::weak_ptr<ws_stream> weak_ws = session.ws;
  session.outbox->on_overflow([weak_ws] {
    if (auto ws = weak_ws.lock()) {
      boost::system::error_code ignored;
      beast::get_lowest_layer(*ws).socket().close(ignored);
    }
  });
  limit_pings(*session.ws, budget, context.metrics);
  session.frames_pending = std::make_shared<frame_ledger>(context.metrics);
  connection_args args;
  args.policy = policy_for(context, community, handle);
  args.policy.ip = std::move(budget);
  args.community = handle.actor;
  args.membership_writer = context.membership_writer;
  args.bridge = context.bridge;
  args.challenge = protocol::make_auth_challenge();
  args.sink = session.outbox;
  args.owner = context.next_owner.fetch_add(1);
  args.fanout = context.fanout;
  args.writer = context.writers[args.owner % context.writers.size()];
  args.readers = context.readers;
  args.readers_waiting = context.readers_waiting;
  args.invites_waiting = context.invites_waiting;
  args.metrics = context.metrics;
  args.frames_pending = session.frames_pending;
  session.actor = context.system->spawn(connection_actor, std::move(args));
  return session;
}

asio::awaitable<void> read_loop(websocket_session& session, relay_metrics& metrics,
                                inbound_bounds inbound, std::atomic<std::size_t>& pod_partial,
                                std::size_t max_pod_partial) {
  partial_message partial(pod_partial);
  const std::size_t max_message = session.ws->read_message_max();
  auto too_big = [&] {
    bump(metrics.oversize_disconnects);
    session.outbox->close(close_reason::too_big);
  };
  for (;;) {
    if (!co_await wait_for_actor(session.frames_pending->pending(), inbound, *session.outbox, metrics))
      co_return;
    // Each message is read into a string of its own that moves into the actor's message: no
    // copy of the frame, and an idle connection holds no read buffer (first_read_bytes). A
    // message longer than two reads is counted pod-wide until it is done.
    // Beast sizes each read by the length a frame's header claims (a compressed frame's is never
    // checked): the buffer's own bound and a bound per read keep that claim from allocating
    // more than arrives, whatever the client says.
    // One byte past the bound: Beast needs a free byte to finish a message that fills it (a
    // compressed one, or one whose last fragment is empty), and refuses a longer one itself.
    std::string text;
    auto buffer = asio::dynamic_buffer(text, max_message + 1);
    bool unfinished = false;
    std::size_t reads = 0;
    for (bool done = false; !done; ++reads) {
      const std::size_t room = max_message + 1 - text.size();
      if (room == 0) { // never: Beast refused it first
        too_big();
        co_return;
      }
      auto [ec, n] = co_await session.ws->async_read_some(buffer, std::min(read_room(reads), room), use_tuple);
      if (ec) {
        if (ec == websocket::error::message_too_big || ec == websocket::error::buffer_overflow)
          too_big();
        co_return;
      }
      done = session.ws->is_message_done();
      if (done || read_room(reads + 1) < read_chunk_bytes)
        continue;
      // What arrived, and the room the next read sets aside (a stalled client holds it too).
      const std::size_t charge = std::exchange(unfinished, true) ? n : text.size() + read_chunk_bytes;
      if (!partial.grew(charge, max_pod_partial)) {
        bump(metrics.partial_message_disconnects);
        session.outbox->close(close_reason::too_big);
        co_return;
      }
    }
    partial.finished();
    session.frames_pending->handed(text.size());
    caf::anon_send(session.actor, frame_atom_v, std::move(text));
  }
}

} // namespace comb::actors
