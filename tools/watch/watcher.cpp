// SPDX-License-Identifier: MIT
#include "tools/watch/watcher.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <iostream>

#include "protocol/event_check.hpp"
#include "tools/watch/alert_output.hpp"
#include "tools/watch/relay_socket.hpp"

namespace comb::watch {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

namespace {

constexpr auto first_backoff = std::chrono::milliseconds(500);
constexpr auto longest_backoff = std::chrono::milliseconds(30'000);
/// A relay that sends no AUTH challenge this long after the upgrade is read without one.
constexpr auto challenge_grace = 3s;

const std::string list_subscription = "list";
const std::string hint_subscription = "hint";
const std::string refetch_prefix = "refetch-";

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

/// The error without Boost's source location, which means nothing to an operator.
std::string describe(const std::exception& error) {
  if (const auto* system = dynamic_cast<const boost::system::system_error*>(&error))
    return system->code().message();
  return error.what();
}

void log(const std::string& line) {
  std::cerr << "comb-watch: " << line << std::endl;
}

} // namespace

struct watcher::connection_state {
  relay_socket& socket;
  std::string relay_pubkey;
  std::string auth_event_id = {};
  bool subscribed = false;
  /// The list subscription reached EOSE, so this connection fully worked: backoff starts over.
  bool caught_up = false;
  /// The hint subscription reached EOSE: 8000s from now on are live joins.
  bool hints_live = false;
  unsigned refetches = 0;
  /// Why the reader or writer stopped.
  std::string failure = {};
};

watcher::watcher(asio::io_context& io, watch_options options, protocol::key_pair key,
                 alert_reducer reducer)
  : io_(io),
    options_(std::move(options)),
    key_(std::move(key)),
    reducer_(std::move(reducer)),
    ticker_(io) {
  if (!options_.exec_command.empty())
    runner_.emplace(io_, options_.exec_command);
}

asio::awaitable<void> watcher::run() {
  rearm_ticker();
  co_await (connect_forever() || tick_forever());
}

asio::awaitable<void> watcher::connect_forever() {
  auto backoff = first_backoff;
  for (;;) {
    try {
      if (co_await connect_once())
        backoff = first_backoff;
    } catch (const std::exception& error) {
      log("connection to " + options_.relay.url + " failed: " + describe(error));
    }
    live_ = nullptr;
    log("reconnecting in " + std::to_string(backoff.count()) + " ms");
    co_await sleep_for(backoff);
    backoff = std::min(backoff * 2, longest_backoff);
  }
}

asio::awaitable<bool> watcher::connect_once() {
  auto relay_pubkey = co_await fetch_relay_pubkey(options_.relay);
  relay_socket socket(co_await asio::this_coro::executor);
  co_await socket.open(options_.relay);
  connection_state connection{socket, relay_pubkey};
  live_ = &connection;
  // `||` cancels the other branches only when one *succeeds*, so the reader and writer record
  // their failure and return instead of throwing.
  co_await (read_frames(connection) || write_frames(connection)
            || subscribe_without_challenge(connection));
  live_ = nullptr;
  if (!connection.caught_up)
    throw std::runtime_error(connection.failure);
  log("connection to " + options_.relay.url + " ended: " + connection.failure);
  co_return connection.caught_up;
}

asio::awaitable<void> watcher::read_frames(connection_state& connection) {
  try {
    for (;;) {
      auto text = co_await connection.socket.read();
      if (auto frame = parse_relay_frame(text))
        on_frame(connection, *frame);
    }
  } catch (const std::exception& error) {
    connection.failure = describe(error);
  }
}

asio::awaitable<void> watcher::write_frames(connection_state& connection) {
  try {
    co_await connection.socket.write_loop();
  } catch (const std::exception& error) {
    connection.failure = describe(error);
  }
}

asio::awaitable<void> watcher::subscribe_without_challenge(connection_state& connection) {
  co_await sleep_for(challenge_grace);
  if (!connection.subscribed && connection.auth_event_id.empty())
    subscribe(connection);
  // Stays pending so that the connection's parallel group ends only with the reader or writer.
  asio::steady_timer forever(co_await asio::this_coro::executor,
                             asio::steady_timer::time_point::max());
  co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
}

void watcher::on_frame(connection_state& connection, const relay_frame& frame) {
  using type = relay_frame::type;
  switch (frame.kind) {
  case type::auth: {
    auto auth = render_auth_frame(key_, options_.relay.url, frame.text, unix_now());
    connection.auth_event_id = auth.event_id;
    connection.socket.send(std::move(auth.frame));
    break;
  }
  case type::ok:
    if (frame.text != connection.auth_event_id)
      break;
    if (!frame.accepted)
      log("the relay refused authentication; reading without it");
    subscribe(connection);
    break;
  case type::event:
    on_event(connection, frame);
    break;
  case type::eose:
    if (frame.subscription == list_subscription && !connection.caught_up) {
      connection.caught_up = true;
      log("subscribed to the member list of " + options_.relay.community);
    }
    if (frame.subscription == hint_subscription)
      connection.hints_live = true;
    if (frame.subscription.starts_with(refetch_prefix))
      connection.socket.send(render_close(frame.subscription));
    break;
  case type::closed:
    if (frame.subscription == list_subscription || frame.subscription == hint_subscription)
      throw std::runtime_error("the relay closed subscription " + frame.subscription + ": "
                               + frame.text);
    log("the relay closed subscription " + frame.subscription + ": " + frame.text);
    break;
  case type::notice:
    log("notice from the relay: " + frame.text);
    break;
  case type::other:
    break;
  }
}

void watcher::on_event(connection_state& connection, const relay_frame& frame) {
  // Only events the relay itself signed speak for the community; anything else is ignored.
  if (!frame.ev || protocol::to_hex(frame.ev->pubkey) != connection.relay_pubkey
      || protocol::verify_event(*frame.ev))
    return;
  const auto& ev = *frame.ev;
  bool from_list = frame.subscription == list_subscription
                   || frame.subscription.starts_with(refetch_prefix);
  if (ev.kind == membership_list_kind && from_list) {
    on_list(ev);
  } else if (ev.kind == member_added_kind && frame.subscription == hint_subscription
             && connection.hints_live) {
    // A hint only: the list it points at is fetched and judged like any other. Stored 8000s
    // (before EOSE) are older than the list this connection already fetched.
    refetch_.hint(std::chrono::steady_clock::now());
  }
  rearm_ticker();
}

void watcher::on_list(const protocol::event& ev) {
  auto list = membership_from_event(ev);
  if (!list)
    return;
  auto verdict = reducer_.on_list(*list, std::chrono::steady_clock::now());
  const auto& community = options_.relay.community;
  if (verdict == list_verdict::seeded)
    log(community + ": seeded with " + std::to_string(list->members.size())
        + " members; watching for new ones");
  if (verdict == list_verdict::revoked && !told_revoked_) {
    told_revoked_ = true;
    log(community + ": the list does not name you as owner or admin; no alerts until restart");
  }
  if (verdict == list_verdict::write_failed)
    log(community + ": could not save the ledger; alert skipped, the next list retries");
}

void watcher::subscribe(connection_state& connection) {
  if (connection.subscribed)
    return;
  connection.subscribed = true;
  const auto& self = connection.relay_pubkey;
  connection.socket.send(render_req(list_subscription, membership_list_kind, self, {}, 1));
  // Hints from now on only: old 8000s say nothing the current list does not.
  connection.socket.send(render_req(hint_subscription, member_added_kind, self, unix_now(), {}));
}

asio::awaitable<void> watcher::tick_forever() {
  for (;;) {
    co_await ticker_.async_wait(asio::as_tuple(asio::use_awaitable));
    on_tick();
  }
}

void watcher::on_tick() {
  auto now = std::chrono::steady_clock::now();
  if (refetch_.take_due(now) && live_ && live_->subscribed) {
    auto id = refetch_prefix + std::to_string(++live_->refetches);
    live_->socket.send(render_req(id, membership_list_kind, live_->relay_pubkey, {}, 1));
  }
  for (const auto& a : reducer_.take_due(now))
    emit(a);
  rearm_ticker();
}

void watcher::rearm_ticker() {
  auto next = asio::steady_timer::time_point::max();
  if (auto flush = reducer_.next_flush())
    next = std::min(next, *flush);
  if (auto refetch = refetch_.due())
    next = std::min(next, *refetch);
  // Changing the expiry cancels a pending wait, which wakes tick_forever to re-read it.
  ticker_.expires_at(next);
}

void watcher::flush_pending() {
  for (const auto& a : reducer_.take_all())
    emit(a);
}

void watcher::emit(const alert& a) {
  const auto& community = options_.relay.community;
  auto json = render_alert_json(a, community, unix_now());
  std::cout << (options_.json ? json : render_alert_text(a, community)) << std::endl;
  if (runner_)
    runner_->run(alert_environment(a, community, json), json + "\n");
}

} // namespace comb::watch
