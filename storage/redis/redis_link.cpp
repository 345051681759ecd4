// SPDX-License-Identifier: MIT
// The hiredis side of redis_pubsub: connection attempts, loss and backoff, SUBSCRIBE and
// PUBLISH. Everything here runs on the strand.
#include "storage/redis/redis_pubsub_impl.hpp"

#include <algorithm>
#include <hiredis/async.h>
#include <string_view>
#include <utility>
#include <vector>

namespace comb::storage {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

/// IPv4 first: "localhost" often lists ::1 first while Redis is bound to 127.0.0.1 only.
std::string preferred_address(const asio::ip::tcp::resolver::results_type& results) {
  const auto v4 = std::find_if(results.begin(), results.end(), [](const auto& entry) {
    return entry.endpoint().address().is_v4();
  });
  return (v4 != results.end() ? *v4 : *results.begin()).endpoint().address().to_string();
}

} // namespace

// -- hiredis callbacks -------------------------------------------------------------------------

redis_pubsub::impl::link& redis_pubsub::impl::link_of(const redisAsyncContext* ac) {
  return *static_cast<link*>(ac->data);
}

void redis_pubsub::impl::on_connected(const redisAsyncContext* ac, int status) noexcept {
  link& l = link_of(ac);
  if (l.ac != ac)
    return;
  if (status != REDIS_OK) {
    l.ac = nullptr; // hiredis frees this context as soon as we return
    return l.owner->connection_lost();
  }
  redisEnableKeepAlive(&l.ac->c); // notices a silently vanished peer on the idle subscriber
  l.connected = true;
  l.owner->publisher_maybe_ready(l);
}

/// The publisher takes PUBLISHes once connected and, with credentials, logged in.
void redis_pubsub::impl::publisher_maybe_ready(link& l) {
  if (&l != &publisher || !l.connected || l.introduction > 0)
    return;
  l.ready = true;
  publisher_ready = true;
  check_up();
}

/// AUTH or SELECT answered: an error (wrong password, unknown user, no such database) ends the
/// attempt; the retry with backoff tries again, and /readyz says why meanwhile.
void redis_pubsub::impl::on_introduction_reply(redisAsyncContext* ac, void* reply,
                                               void* /*privdata*/) noexcept {
  const auto* r = static_cast<const redisReply*>(reply);
  link& l = link_of(ac);
  if (r == nullptr || l.ac != ac)
    return;
  if (r->type == REDIS_REPLY_ERROR) {
    // The first refusal in a row is reported (on_state(false) while not up), so the owner can
    // say why it is not connecting; the retries that follow are not.
    if (!l.owner->stats.refused_login.exchange(true))
      l.owner->notify_state(false);
    return l.owner->connection_lost();
  }
  l.owner->stats.refused_login = false;
  --l.introduction;
  l.owner->publisher_maybe_ready(l);
}

void redis_pubsub::impl::on_disconnected(const redisAsyncContext* ac, int /*status*/) noexcept {
  link& l = link_of(ac);
  if (l.ac != ac)
    return;
  l.ac = nullptr; // hiredis is freeing it
  l.owner->connection_lost();
}

void redis_pubsub::impl::on_subscriber_reply(redisAsyncContext* ac, void* reply,
                                             void* /*privdata*/) noexcept {
  const auto* r = static_cast<const redisReply*>(reply);
  link& l = link_of(ac);
  // A null reply means the context is going away; its disconnect callback handles that.
  if (r == nullptr || l.ac != ac || r->type != REDIS_REPLY_ARRAY || r->elements != 3
      || r->element[0]->type != REDIS_REPLY_STRING)
    return;
  const std::string_view kind(r->element[0]->str, r->element[0]->len);
  const auto* payload = r->element[2];
  if (kind == "message" && payload->type == REDIS_REPLY_STRING) {
    ++l.owner->stats.received;
    // Anyone who may PUBLISH on the channel chooses the size; hiredis holds it already, the
    // copy for the callback and what follows need not.
    if (payload->len > l.owner->opts.max_message_bytes) {
      ++l.owner->stats.oversized;
      return;
    }
    l.owner->deliver(std::string_view(payload->str, payload->len));
  } else if (kind == "subscribe") {
    l.ready = true;
    l.owner->check_up();
  }
}

/// Runs for every PUBLISH exactly once: with the reply, or with null when the context is freed.
/// `privdata` carries the payload's size (not a pointer: nothing is allocated per PUBLISH).
void redis_pubsub::impl::on_publish_reply(redisAsyncContext* ac, void* reply,
                                          void* privdata) noexcept {
  const auto* r = static_cast<const redisReply*>(reply);
  auto& self = *link_of(ac).owner;
  const auto bytes = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(privdata));
  if (r != nullptr && r->type == REDIS_REPLY_INTEGER) {
    self.release_in_flight(bytes);
    ++self.stats.published;
  } else {
    self.count_failed_in_flight(bytes);
  }
}

void redis_pubsub::impl::on_ping_reply(redisAsyncContext* ac, void* reply,
                                       void* /*privdata*/) noexcept {
  link& l = link_of(ac);
  if (reply != nullptr && l.ac == ac)
    l.owner->ping_outstanding = false;
}

// -- connecting ----------------------------------------------------------------------------

void redis_pubsub::impl::begin_attempt() {
  if (stopped)
    return;
  ++attempt;
  arm_connect_timer();
  error_code not_numeric;
  const auto address = asio::ip::make_address(endpoint.host, not_numeric);
  if (!not_numeric)
    return open_links(address.to_string());
  // hiredis would resolve with a blocking getaddrinfo on the strand; Asio's resolver does not.
  resolver.async_resolve(
      endpoint.host, std::to_string(endpoint.port),
      on_strand([self = shared_from_this(), id = attempt](
                    const error_code& error, const asio::ip::tcp::resolver::results_type& results) {
        if (id != self->attempt || self->stopped)
          return;
        if (error || results.empty())
          return self->connection_lost();
        self->open_links(preferred_address(results));
      }));
}

void redis_pubsub::impl::arm_connect_timer() {
  connect_timer.expires_after(redis_timeout);
  connect_timer.async_wait(
      on_strand([self = shared_from_this(), id = attempt](const error_code& e) {
        if (!e && id == self->attempt && !self->is_up && !self->stopped)
          self->connection_lost();
      }));
}

void redis_pubsub::impl::open_links(const std::string& ip) {
  close_links();
  if (!open(publisher, ip) || !open(subscriber, ip))
    return connection_lost();
  if (!introduce(publisher) || !introduce(subscriber))
    return connection_lost();
  // Queued now, written by hiredis once the connect completes.
  const char* argv[] = {"SUBSCRIBE", opts.channel.data()};
  const std::size_t lengths[] = {9, opts.channel.size()};
  if (redisAsyncCommandArgv(subscriber.ac, on_subscriber_reply, nullptr, 2, argv, lengths)
      != REDIS_OK)
    connection_lost();
}

/// Queues AUTH and SELECT (when the URL asks for them) ahead of anything else on `l`: hiredis
/// writes them first once connected, on every reconnect alike.
bool redis_pubsub::impl::introduce(link& l) {
  auto queue = [&](std::initializer_list<std::string_view> args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (auto a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    if (redisAsyncCommandArgv(l.ac, on_introduction_reply, nullptr, static_cast<int>(argv.size()),
                              argv.data(), lengths.data())
        != REDIS_OK)
      return false;
    ++l.introduction;
    return true;
  };
  const std::string database = std::to_string(endpoint.database);
  if (!endpoint.password.empty()) {
    bool queued = endpoint.user.empty() ? queue({"AUTH", endpoint.password})
                                        : queue({"AUTH", endpoint.user, endpoint.password});
    if (!queued)
      return false;
  }
  return endpoint.database == 0 || queue({"SELECT", database});
}

bool redis_pubsub::impl::open(link& l, const std::string& ip) {
  redisAsyncContext* ac = redisAsyncConnect(ip.c_str(), endpoint.port);
  if (ac == nullptr)
    return false;
  if (ac->err != 0 || !redis_detail::attach_to_asio(ac, io, strand, weak_from_this())) {
    redisAsyncFree(ac); // e.g. a refused loopback connect fails synchronously
    return false;
  }
  ac->data = &l;
  l.ac = ac;
  l.ready = false;
  l.connected = false;
  l.introduction = 0;
  redisAsyncSetDisconnectCallback(ac, on_disconnected);
  redisAsyncSetConnectCallback(ac, on_connected); // arms the write wait that reports the connect
  return true;
}

void redis_pubsub::impl::check_up() {
  if (is_up || stopped || !publisher.ready || !subscriber.ready)
    return;
  connect_timer.cancel();
  backoff = opts.min_backoff;
  is_up = true;
  ping_outstanding = false;
  notify_state(true);
  check_health();
}

/// Every period while up: lost if the previous PING is still unanswered, else send the next.
void redis_pubsub::impl::check_health() {
  if (!is_up || stopped)
    return;
  if (ping_outstanding)
    return connection_lost();
  const char* argv[] = {"PING"};
  const std::size_t lengths[] = {4};
  if (redisAsyncCommandArgv(publisher.ac, on_ping_reply, nullptr, 1, argv, lengths) != REDIS_OK)
    return connection_lost();
  ping_outstanding = true;
  health_timer.expires_after(redis_timeout);
  health_timer.async_wait(on_strand([self = shared_from_this(), id = attempt](const error_code& e) {
    if (!e && id == self->attempt)
      self->check_health();
  }));
}

// -- losing, retrying, closing ---------------------------------------------------------------

void redis_pubsub::impl::connection_lost() {
  if (stopped)
    return;
  ++attempt;
  connect_timer.cancel();
  health_timer.cancel();
  close_links();
  if (is_up.exchange(false))
    notify_state(false);
  if (stopped) // on_state(false) may have called stop()
    return;
  retry_timer.expires_after(backoff);
  backoff = std::min(backoff * 2, opts.max_backoff);
  retry_timer.async_wait(on_strand([self = shared_from_this()](const error_code& e) {
    if (e || self->stopped)
      return;
    ++self->stats.reconnects;
    self->begin_attempt();
  }));
}

/// Frees both contexts. Their pending callbacks run inside redisAsyncFree with a null reply
/// (failing the unanswered PUBLISHes); `ac` is cleared first, so those callbacks see a context
/// that is no longer ours and do not report a loss.
void redis_pubsub::impl::close_links() {
  publisher_ready = false;
  for (link* l : {&publisher, &subscriber}) {
    l->ready = false;
    if (auto* ac = std::exchange(l->ac, nullptr))
      redisAsyncFree(ac); // hiredis defers it when we are inside one of this context's callbacks
  }
}

void redis_pubsub::impl::shut_down() {
  ++attempt;
  connect_timer.cancel();
  retry_timer.cancel();
  health_timer.cancel();
  resolver.cancel();
  close_links();
  is_up = false;
}

// -- publishing --------------------------------------------------------------------------------

void redis_pubsub::impl::send_publish(const std::string& payload) {
  const char* argv[] = {"PUBLISH", opts.channel.data(), payload.data()};
  const std::size_t lengths[] = {7, opts.channel.size(), payload.size()};
  void* size = reinterpret_cast<void*>(static_cast<std::uintptr_t>(payload.size()));
  if (publisher.ac == nullptr || !publisher.ready
      || redisAsyncCommandArgv(publisher.ac, on_publish_reply, size, 3, argv, lengths) != REDIS_OK)
    count_failed_in_flight(payload.size());
}

} // namespace comb::storage
