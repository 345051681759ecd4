// SPDX-License-Identifier: MIT
#include "actors/gateway/server.hpp"

#include <array>
#include <cstring>
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <spdlog/spdlog.h>

#include "actors/clock.hpp"
#include "actors/gateway/forwarded_client.hpp"
#include "actors/gateway/host_lookup.hpp"
#include "actors/gateway/http_routes.hpp"
#include "actors/gateway/listen_address.hpp"
#include "actors/gateway/management_route.hpp"
#include "actors/gateway/partial_message.hpp"
#include "actors/gateway/socket_refusals.hpp"
#include "actors/gateway/socket_writer.hpp"
#include "actors/gateway/websocket_session.hpp"
#include "actors/messages.hpp"
#include "protocol/host.hpp"

namespace comb::actors {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using tcp_stream = beast::tcp_stream;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

ip_limits address_limits(const conf::relay_settings& s) {
  ip_limits limits;
  limits.frame_rate = s.ip_frame_rate;
  limits.frame_burst = s.ip_frame_burst;
  limits.request_rate = s.ip_request_rate;
  limits.request_burst = s.ip_request_burst;
  limits.max_connections = s.max_connections_per_ip;
  limits.max_tracked = s.max_tracked_ips;
  limits.database_ms_rate = s.ip_database_ms_rate;
  limits.database_ms_burst = s.ip_database_ms_burst;
  return limits;
}


/// Accept errors that mean "out of descriptors or memory": retrying at once would spin.
bool out_of_resources(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space
         || ec == asio::error::no_memory
         || ec == boost::system::errc::too_many_files_open_in_system;
}



/// Completion of a socket's coroutines: an exception that escaped one ends only that socket.
void log_escaped_exception(std::exception_ptr error) {
  if (!error)
    return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    spdlog::warn("session ended by exception: {}", e.what());
  }
}

} // namespace

/// Keeps a session in the server's table for as long as it lives.
class session_registration {
public:
  session_registration(session_table& table, std::shared_ptr<websocket_outbox> outbox,
                       caf::actor actor, std::int64_t community_id, const member_cache& community)
    : table_(table), id_(table.enroll(std::move(outbox), std::move(actor), community_id, community)) {}
  ~session_registration() { table_.withdraw(id_); }
  session_registration(const session_registration&) = delete;
  session_registration& operator=(const session_registration&) = delete;

private:
  session_table& table_;
  std::uint64_t id_;
};

server::server(asio::io_context& io, std::shared_ptr<gateway_context> context)
  : io_(io),
    context_(std::move(context)),
    sockets_(context_->settings.max_connections),
    addresses_(std::make_shared<ip_table>(address_limits(context_->settings))),
    trusted_proxies_(conf::parse_networks(context_->settings.trusted_proxies).networks) {}

void server::start() {
  start(open_listeners(io_, "COMB_LISTEN", context_->settings.listen,
                       asio::socket_base::max_listen_connections));
}

void server::start(std::vector<asio::ip::tcp::acceptor> acceptors) {
  acceptors_ = std::move(acceptors);
  port_ = acceptors_.front().local_endpoint().port();
  for (auto& acceptor : acceptors_)
    asio::co_spawn(io_, accept_loop(acceptor), asio::detached);
}

void server::stop_accepting() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    for (auto& acceptor : acceptors_)
      acceptor.close(ignored);
  });
}

void server::drain() {
  stop_accepting();
  sessions_.drain();
}

void server::stop() {
  stop_accepting();
  for (auto& outbox : sessions_.stop())
    outbox->close(close_reason::going_away);
}

void server::spread_sockets(std::vector<asio::io_context*> contexts) {
  socket_contexts_ = std::move(contexts);
}

asio::io_context& server::next_socket_context() {
  if (socket_contexts_.empty())
    return io_;
  return *socket_contexts_[next_socket_context_++ % socket_contexts_.size()];
}

std::size_t server::open_connections() const {
  return sessions_.size();
}

std::size_t server::management_calls_waiting() const {
  return context_->management_calls_waiting.load();
}

void server::close_community(std::int64_t community_id) {
  sessions_.close_community(community_id);
}

void server::recheck_community(std::int64_t community_id) {
  sessions_.recheck_community(community_id);
}

void server::end_remaining_actors() {
  sessions_.end_remaining_actors();
}

asio::awaitable<void> server::accept_loop(tcp::acceptor& acceptor) {
  asio::steady_timer backoff(io_);
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(next_socket_context()), use_tuple);
    if (ec == asio::error::operation_aborted || !acceptor.is_open())
      co_return;
    if (out_of_resources(ec)) {
      // The pending connection stays in the backlog; retrying at once would spin a core.
      bump(context_->metrics->accept_backoffs);
      spdlog::warn("accept paused for 100 ms: {}", ec.message());
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(use_tuple);
      continue;
    }
    if (ec)
      continue;
    // Frames are small and answered one by one: Nagle's delay would add ~40 ms to each reply.
    boost::system::error_code no_delay_failed; // a socket without it still works, just slower
    socket.set_option(tcp::no_delay(true), no_delay_failed);
    auto executor = socket.get_executor();
    asio::co_spawn(executor, serve(std::move(socket)), log_escaped_exception);
  }
}

namespace {

constexpr std::size_t max_request_header_bytes = 16 * 1024;
constexpr std::size_t max_request_body_bytes = 64 * 1024;
/// Request bodies being read, over every connection: Beast reserves a declared Content-Length
/// as soon as the headers are in, so ten thousand sockets that each declare 64 KiB and stop
/// would hold 640 MiB. 256 bodies of the largest size read at once.
constexpr std::size_t max_pod_request_body_bytes = 256 * max_request_body_bytes;

/// Request bodies one client address may have on their way at once: a browser's NIP-86 calls
/// come a few at a time, and 16 of the largest are a sixteenth of the pod's budget for them.
constexpr std::size_t max_bodies_per_address = 16;

/// A request body being read from one client address (ip_budget::try_begin_body), given back
/// when it goes.
class body_place {
public:
  body_place() = default;
  body_place(const body_place&) = delete;
  body_place& operator=(const body_place&) = delete;
  ~body_place() { release(); }

  /// False when the address has max_bodies_per_address bodies in progress (or is not tracked).
  [[nodiscard]] bool take(std::shared_ptr<ip_budget> budget) {
    if (!budget || !budget->try_begin_body(max_bodies_per_address))
      return false;
    budget_ = std::move(budget);
    return true;
  }

  /// Gives the place back now (a refused body, whose socket still drains for a moment).
  void release() {
    if (auto budget = std::exchange(budget_, nullptr))
      budget->end_body();
  }

private:
  std::shared_ptr<ip_budget> budget_;
};

/// What a request's body may hold once its headers are read: its Content-Length, or the bound
/// for a chunked one.
std::size_t declared_body_bytes(const http::request_parser<http::string_body>& parser) {
  auto length = parser.content_length();
  return length ? static_cast<std::size_t>(std::min<std::uint64_t>(*length, max_request_body_bytes))
                : max_request_body_bytes;
}


} // namespace

/// Counts a socket from accept to close.
class socket_pass {
public:
  socket_pass(socket_gate& gate, relay_metrics& metrics) : place_(gate), metrics_(metrics) {
    metrics_.sockets_open.fetch_add(1, std::memory_order_relaxed);
  }
  ~socket_pass() { metrics_.sockets_open.fetch_sub(1, std::memory_order_relaxed); }
  socket_pass(const socket_pass&) = delete;
  socket_pass& operator=(const socket_pass&) = delete;

private:
  gate_place place_;
  relay_metrics& metrics_;
};

asio::awaitable<void> server::serve(tcp::socket socket) {
  auto& metrics = *context_->metrics;
  tcp_stream stream(std::move(socket));
  boost::system::error_code peer_gone;
  auto remote = stream.socket().remote_endpoint(peer_gone);
  if (peer_gone)
    co_return;
  auto peer_v6 = remote.address().is_v4()
                   ? asio::ip::make_address_v6(asio::ip::v4_mapped, remote.address().to_v4())
                   : remote.address().to_v6();
  conf::ip_address peer;
  auto peer_bytes = peer_v6.to_bytes();
  std::copy(peer_bytes.begin(), peer_bytes.end(), peer.bytes.begin());
  std::unique_ptr<ip_table::slot> slot;
  // The address is checked before the pod's socket count is taken: one address refused at its
  // own cap must not hold the pod's places while its refusals are answered.
  // A trusted proxy carries many clients: their places are taken once each request names one.
  if (!conf::contains_any(trusted_proxies_, peer)) {
    ip_table::refusal why{};
    slot = addresses_->open(peer.budget_key(), monotonic_seconds(), why);
    metrics.addresses_tracked.store(static_cast<std::int64_t>(addresses_->tracked()),
                                    std::memory_order_relaxed);
    if (!slot) {
      bool busy = why == ip_table::refusal::too_many_addresses;
      bump(busy ? metrics.connections_refused_busy : metrics.connections_refused_address);
      bump(metrics.connections_refused);
      co_await refuse_socket(stream, refusals_, metrics, refusal_for(why));
      co_return;
    }
  }
  if (!sockets_.try_enter()) {
    slot.reset();
    bump(metrics.connections_refused_busy);
    bump(metrics.connections_refused);
    co_await refuse_socket(stream, refusals_, metrics, {http::status::service_unavailable, "relay: too many connections\n"});
    co_return;
  }
  auto pass = std::make_unique<socket_pass>(sockets_, metrics);
  auto upgrade = co_await serve_requests(stream, peer, std::move(slot));
  if (!upgrade)
    co_return;
  // The WebSocket runs in a coroutine of its own, so that what the HTTP phase held (this frame,
  // serve_requests' frame with its parser, the stream moved from here) is freed now rather than
  // at close: an idle connection's memory is mostly what it holds while it waits.
  auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor,
                 run_websocket(std::make_unique<tcp_stream>(std::move(stream)), std::move(*upgrade),
                               std::move(pass)),
                 log_escaped_exception);
}

asio::awaitable<std::optional<websocket_upgrade>> server::serve_requests(tcp_stream& stream,
                                                                         conf::ip_address peer,
                                                                         std::unique_ptr<ip_table::slot> slot) {
  auto& metrics = *context_->metrics;
  const auto& s = context_->settings;
  // Bounded: the parser's limits count headers and declared chunk sizes, not the bytes of a
  // chunk line or trailer that never ends, which a request could otherwise make it buffer.
  beast::flat_buffer buffer(max_request_header_bytes + max_request_body_bytes + 4096);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(max_request_header_bytes);
    parser.body_limit(max_request_body_bytes);
    stream.expires_after(std::chrono::seconds(s.upgrade_timeout_seconds));
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
    partial_message body_bytes(context_->request_body_bytes);
    if (!ec && !parser.is_done()) {
      body_place reading; // while the body is read, not while the request is answered
      auto sender = slot ? slot->budget()
                         : addresses_->budget(forwarded_client(parser.get(), peer, trusted_proxies_).budget_key(),
                                              monotonic_seconds());
      if (!sender) { // the pod tracks as many addresses as it may
        bump(metrics.connections_refused_busy);
        http_response busy = bound_refusal(parser.get(), http::status::service_unavailable,
                                           "relay: too many client addresses, retry shortly\n");
        co_await refuse_unread(stream, refusals_, metrics, busy);
        co_return std::nullopt;
      }
      if (!reading.take(std::move(sender))) {
        bump(metrics.http_rate_limited);
        http_response limited = bound_refusal(parser.get(), http::status::too_many_requests,
                                              "rate-limited: too many requests in progress from your address\n");
        co_await refuse_unread(stream, refusals_, metrics, limited);
        co_return std::nullopt;
      }
      if (!body_bytes.grew(declared_body_bytes(parser), max_pod_request_body_bytes)) {
        bump(metrics.connections_refused_busy);
        http_response busy = bound_refusal(parser.get(), http::status::service_unavailable,
                                           "relay: too many requests in progress, retry shortly\n");
        // Not held while the socket drains: others' bodies may go on meanwhile.
        body_bytes.finished();
        reading.release();
        co_await refuse_unread(stream, refusals_, metrics, busy);
        co_return std::nullopt;
      }
      auto [body_ec, body_n] = co_await http::async_read(stream, buffer, parser, use_tuple);
      ec = body_ec;
    }
    if (ec == http::error::body_limit || ec == http::error::header_limit
        || ec == http::error::buffer_overflow) {
      bump(metrics.http_too_large);
      http_response too_large =
        ec == http::error::header_limit ? oversize_headers() : oversize_body(parser.get());
      body_bytes.finished();
      co_await refuse_unread(stream, refusals_, metrics, too_large);
      co_return std::nullopt;
    }
    if (ec == beast::error::timeout)
      bump(metrics.upgrade_timeouts);
    if (ec)
      co_return std::nullopt;
    http_request request = parser.release();
    // Probes cost no lookup and come from load balancers at their own pace: never limited.
    if (auto probe = probe_route(request, *context_)) {
      co_await http::async_write(stream, *probe, use_tuple);
      if (!request.keep_alive())
        co_return std::nullopt;
      continue;
    }
    auto client = forwarded_client(request, peer, trusted_proxies_);
    auto budget = slot ? slot->budget() : addresses_->budget(client.budget_key(), monotonic_seconds());
    if (!budget || !budget->try_take_request(monotonic_seconds())) {
      bump(budget ? metrics.http_rate_limited : metrics.connections_refused_busy);
      http_response limited = bound_refusal(request, http::status::service_unavailable,
                                            "relay: too many client addresses, retry shortly\n");
      if (budget)
        limited = bound_refusal(request, http::status::too_many_requests,
                                "rate-limited: too many requests from your address\n");
      co_await http::async_write(stream, limited, use_tuple);
      co_return std::nullopt;
    }
    auto host = protocol::normalize_host(std::string(request[http::field::host]));
    // Not a conditional expression: g++ 12 miscompiles co_await inside `?:`.
    host_lookup lookup{true, {}};
    if (host)
      lookup = co_await lookup_host(*context_, *host);
    if (!serves(lookup)) {
      bump(context_->metrics->connections_refused);
      // Named, not a temporary: g++ 12 mishandles temporaries alive across co_await.
      http_response refused = refusal(request, lookup);
      co_await http::async_write(stream, refused, use_tuple);
      co_return std::nullopt;
    }
    if (websocket::is_upgrade(request)) {
      if (!slot) {
        ip_table::refusal why{};
        slot = addresses_->open(client.budget_key(), monotonic_seconds(), why);
        if (!slot) {
          bool busy = why == ip_table::refusal::too_many_addresses;
          bump(busy ? metrics.connections_refused_busy : metrics.connections_refused_address);
          bump(metrics.connections_refused);
          socket_refusal answer = refusal_for(why);
          http_response refused = closing_text(request.version(), answer.status, answer.text);
          co_await http::async_write(stream, refused, use_tuple);
          co_return std::nullopt;
        }
      }
      // RFC 6455 has a client wait for the handshake's answer before it sends frames; bytes
      // already here would be lost to the WebSocket and would pin the read buffer for its life.
      if (buffer.size() != 0 || !request.body().empty()) {
        http_response early = closing_text(request.version(), http::status::bad_request,
                                             "relay: data sent before the WebSocket handshake was answered\n");
        co_await http::async_write(stream, early, use_tuple);
        co_return std::nullopt;
      }
      stream.expires_never();
      // Returned to `serve`, which runs the WebSocket in a coroutine of its own; the buffer is
      // empty (checked above) and goes with this frame.
      buffer.shrink_to_fit();
      body_bytes.finished();
      // NIP-42 binds AUTH to the host this connection was made to, which may be an alias.
      websocket_upgrade upgrade{std::move(request), *lookup.community, std::move(slot), client.text()};
      upgrade.community.host = *host;
      co_return upgrade;
    }
    http_response response;
    if (request.method() == http::verb::post) // NIP-86
      response = co_await answer_management(*context_, request, lookup.community->id, *host);
    else
      response = community_route(request, *context_, *lookup.community);
    // The read's deadline may have passed while a management call waited on Postgres; the
    // answer gets a budget of its own, or a change made would go unanswered.
    stream.expires_after(std::chrono::seconds(s.upgrade_timeout_seconds));
    co_await http::async_write(stream, response, use_tuple);
    if (!request.keep_alive())
      co_return std::nullopt;
  }
}

namespace {

/// The socket's writer; when it ends, however it ends (a coroutine an escaping exception
/// destroyed never calls co_spawn's handler), the reader's wait for it ends too.
asio::awaitable<void> write_then_tell(std::shared_ptr<ws_stream> ws, std::shared_ptr<websocket_outbox> outbox,
                                      frame_writing writing, std::chrono::seconds stall_limit,
                                      std::shared_ptr<asio::steady_timer> done, std::shared_ptr<bool> finished) {
  struct tell {
    std::shared_ptr<asio::steady_timer> done;
    std::shared_ptr<bool> finished;
    ~tell() {
      *finished = true;
      done->cancel();
    }
  } told{std::move(done), std::move(finished)};
  co_await write_loop(std::move(ws), std::move(outbox), writing, stall_limit);
}

} // namespace

asio::awaitable<void> server::run_websocket(std::unique_ptr<tcp_stream> stream, websocket_upgrade upgrade,
                                            [[maybe_unused]] std::unique_ptr<socket_pass> pass) {
  auto& metrics = *context_->metrics;
  const storage::community_row& community = upgrade.community;
  auto handle = context_->registry->find(community.id);
  if (!handle) {
    http_response unavailable = refusal(upgrade.request, host_lookup{false, {}});
    co_await http::async_write(*stream, unavailable, use_tuple);
    co_return;
  }
  websocket_session session =
    open_session(std::move(*stream), *context_, community, *handle, upgrade.slot->budget());
  stream.reset(); // moved from, but Beast's stream still holds its timers
  session.client = std::move(upgrade.client);
  session_registration registration(sessions_, session.outbox, session.actor, community.id,
                                    *handle->members);
  auto [ec] = co_await session.ws->async_accept(upgrade.request, use_tuple);
  if (ec == beast::error::timeout)
    bump(metrics.upgrade_timeouts);
  if (ec) {
    caf::anon_send(session.actor, hangup_atom_v);
    co_return;
  }
  upgrade.request = {}; // its headers are not needed for the life of the connection
  bump(metrics.connections_total);
  metrics.connections_current.fetch_add(1);
  // Normally undone below, once the writer finished; this covers a coroutine destroyed where it
  // waits (an exception that escaped a socket operation, dropped by run_guarded): its actor is
  // told and the count goes down, so neither outlives the socket.
  struct ending {
    websocket_session& session;
    relay_metrics& metrics;
    bool hung_up = false;
    bool counted_off = false;
    ~ending() {
      if (!hung_up) {
        session.outbox->close(close_reason::going_away);
        caf::anon_send(session.actor, hangup_atom_v);
      }
      if (!counted_off)
        metrics.connections_current.fetch_sub(1);
    }
  } end{session, metrics};
  auto executor = co_await asio::this_coro::executor;
  auto writer_done = std::make_shared<asio::steady_timer>(executor, asio::steady_timer::time_point::max());
  auto writer_finished = std::make_shared<bool>(false);
  auto writing = context_->settings.deflate ? frame_writing::by_beast : frame_writing::gathered;
  // A socket that takes nothing while frames wait is cut after the idle timeout, as a peer that
  // sends nothing is.
  const std::chrono::seconds stall_limit(context_->settings.idle_timeout_seconds);
  asio::co_spawn(executor,
                 write_then_tell(session.ws, session.outbox, writing, stall_limit, writer_done, writer_finished),
                 asio::detached);
  co_await read_loop(session, metrics,
                     {context_->settings.max_inbound_bytes, context_->settings.max_pod_inbound_bytes},
                     context_->partial_message_bytes, context_->settings.max_pod_partial_bytes);
  auto why = session.outbox->closing();
  session.outbox->close(close_reason::going_away);
  caf::anon_send(session.actor, hangup_atom_v);
  end.hung_up = true;
  // Both coroutines share the strand, so the flag cannot change between the test and the wait.
  if (!*writer_finished)
    co_await writer_done->async_wait(use_tuple);
  metrics.connections_current.fetch_sub(1);
  end.counted_off = true;
  spdlog::info("connection closed: peer {} client {} community {} host {} reason {}", session.peer,
               session.client, community.id, community.host, describe(why));
}

} // namespace comb::actors
