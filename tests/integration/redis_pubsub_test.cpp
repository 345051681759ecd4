// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/redis/redis_pubsub.hpp"
#include "support/redis_test_server.hpp"

using namespace comb;
using namespace std::chrono_literals;
using test::clock_type;
using test::eventually;
using test::free_port;
using test::io_threads;
using test::redis_server;
using test::tcp_socket;

namespace {

/// Records what one redis_pubsub reports; `closed` marks callbacks that came after stop().
struct recorder {
  std::mutex mutex;
  std::vector<std::string> messages;
  std::vector<bool> states;
  std::atomic<bool> closed{false};
  std::atomic<int> late_callbacks{0};

  std::size_t message_count() {
    std::lock_guard lock(mutex);
    return messages.size();
  }
  std::vector<std::string> received() {
    std::lock_guard lock(mutex);
    return messages;
  }
  std::vector<bool> changes() {
    std::lock_guard lock(mutex);
    return states;
  }

  storage::redis_pubsub make(boost::asio::io_context& io, const std::string& url,
                             const std::string& channel = "comb:test",
                             std::size_t max_message_bytes = std::numeric_limits<std::size_t>::max()) {
    return {io,
            {.url = url, .channel = channel, .min_backoff = 20ms, .max_backoff = 200ms,
             .max_message_bytes = max_message_bytes},
            [this](std::string payload) {
              late_callbacks += closed ? 1 : 0;
              std::lock_guard lock(mutex);
              messages.push_back(std::move(payload));
            },
            [this](bool up) {
              late_callbacks += closed ? 1 : 0;
              std::lock_guard lock(mutex);
              states.push_back(up);
            }};
  }
};

} // namespace

TEST_CASE("a payload reaches another instance and the publisher itself", "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra, rb, rc;
  auto a = ra.make(threads.io, server.url());
  auto b = rb.make(threads.io, server.url());
  auto other_channel = rc.make(threads.io, server.url(), "comb:other");
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE_FALSE(other_channel.start());
  REQUIRE(eventually([&] { return a.up() && b.up() && other_channel.up(); }));
  CHECK(ra.changes() == std::vector<bool>{true});

  const std::string payload("binary\0safe \xff payload", 20);
  a.publish(payload);
  REQUIRE(eventually([&] { return ra.message_count() == 1 && rb.message_count() == 1; }));
  CHECK(rb.received().front() == payload);
  CHECK(ra.received().front() == payload);
  CHECK(eventually([&] { return a.stats().published == 1; }));
  CHECK(a.stats().publish_failed == 0);
  CHECK(b.stats().received == 1);
  CHECK(rc.message_count() == 0); // another channel hears nothing
}

TEST_CASE("a message past max_message_bytes is dropped and counted, the next one arrives",
          "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra, rb;
  auto a = ra.make(threads.io, server.url());
  auto b = rb.make(threads.io, server.url(), "comb:test", 1000);
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE(eventually([&] { return a.up() && b.up(); }));
  a.publish(std::string(1001, 'x'));
  a.publish(std::string(1000, 'y'));
  REQUIRE(eventually([&] { return rb.message_count() == 1; }));
  CHECK(rb.received() == std::vector<std::string>{std::string(1000, 'y')});
  CHECK(b.stats().received == 2);
  CHECK(b.stats().oversized == 1);
  CHECK(b.up());
}

TEST_CASE("a thousand messages arrive in order, none lost", "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra, rb;
  auto a = ra.make(threads.io, server.url());
  auto b = rb.make(threads.io, server.url());
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE(eventually([&] { return a.up() && b.up(); }));

  std::vector<std::string> sent;
  for (int i = 0; i < 1000; ++i)
    a.publish(sent.emplace_back("m" + std::to_string(i)));
  REQUIRE(eventually([&] { return rb.message_count() == sent.size(); }, 10s));
  CHECK(rb.received() == sent);
  CHECK(eventually([&] { return a.stats().published == sent.size(); }));
  CHECK(a.stats().publish_failed == 0);
  CHECK(b.stats().received == sent.size());
}

/// A Redis server of its own and a redis_pubsub on it, started and up.
struct started_pubsub {
  redis_server server;
  io_threads threads;
  recorder ra;
  storage::redis_pubsub a = ra.make(threads.io, server.url());

  started_pubsub() {
    REQUIRE_FALSE(a.start());
    REQUIRE(eventually([&] { return a.up(); }));
  }
};

TEST_CASE_METHOD(started_pubsub, "a stopped Redis is reported down and publishes fail",
                 "[integration][redis]") {
  server.stop();
  REQUIRE(eventually([&] { return ra.changes() == std::vector<bool>{true, false}; }, 3s));
  CHECK_FALSE(a.up());
  const auto failed_before = a.stats().publish_failed.load();
  for (int i = 0; i < 10; ++i)
    a.publish("lost");
  CHECK(a.stats().publish_failed == failed_before + 10); // dropped at once, never queued
  CHECK(a.stats().published == 0);
  // It keeps retrying (with backoff) and stays down without inventing an "up".
  CHECK(eventually([&] { return a.stats().reconnects >= 3; }));
  CHECK_FALSE(a.up());
  CHECK(ra.changes() == std::vector<bool>{true, false});
}

TEST_CASE("a restarted Redis is reconnected and delivery resumes", "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra, rb;
  auto a = ra.make(threads.io, server.url());
  auto b = rb.make(threads.io, server.url());
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE(eventually([&] { return a.up() && b.up(); }));
  a.publish("before");
  REQUIRE(eventually([&] { return rb.message_count() == 1; }));

  server.stop();
  REQUIRE(eventually([&] { return !a.up() && !b.up(); }, 3s));
  a.publish("while down");
  server.start();
  const std::vector<bool> bounced{true, false, true};
  REQUIRE(eventually([&] { return ra.changes() == bounced && rb.changes() == bounced; }, 5s));
  CHECK(a.stats().reconnects >= 1);
  CHECK(b.stats().reconnects >= 1);

  a.publish("after");
  REQUIRE(eventually([&] { return rb.message_count() == 2; }));
  CHECK(rb.received() == std::vector<std::string>{"before", "after"}); // nothing replayed
  CHECK(a.stats().publish_failed == 1);
}

TEST_CASE("stop() while Redis is down returns promptly and silences callbacks",
          "[integration][redis]") {
  io_threads threads;
  recorder ra;
  auto a = ra.make(threads.io, "redis://127.0.0.1:" + std::to_string(free_port()));
  REQUIRE_FALSE(a.start());
  REQUIRE(eventually([&] { return a.stats().reconnects >= 2; })); // it is busy retrying

  const auto started = clock_type::now();
  a.stop();
  ra.closed = true;
  CHECK(clock_type::now() - started < 1s);
  const auto reconnects = a.stats().reconnects.load();
  std::this_thread::sleep_for(300ms); // longer than max_backoff
  CHECK(a.stats().reconnects == reconnects);
  CHECK(ra.late_callbacks == 0);
  CHECK(ra.changes().empty()); // never up, so never reported
  a.publish("after stop");
  CHECK(a.stats().publish_failed == 1);
}

TEST_CASE_METHOD(started_pubsub, "a frozen Redis bounds the pipeline and trips the PING watchdog",
                 "[integration][redis]") {
  server.freeze(); // TCP stays healthy; only the missing PONG can tell
  for (int i = 0; i < 12'000; ++i)
    a.publish("unanswered"); // beyond 10,000 in flight, publishes are shed at once
  CHECK(a.stats().publish_failed >= 2'000);
  REQUIRE(eventually([&] { return !a.up(); }, 6s));
  CHECK(ra.changes() == std::vector<bool>{true, false});
  CHECK(eventually([&] { return a.stats().published + a.stats().publish_failed == 12'000; }));
  server.thaw();
  REQUIRE(eventually([&] { return a.up(); }, 6s));
  CHECK(ra.changes() == std::vector<bool>{true, false, true});
}

TEST_CASE_METHOD(started_pubsub, "a frozen Redis bounds the bytes in flight, not only the count",
                 "[integration][redis]") {
  server.freeze();
  // 400 envelopes of 1 MiB (a large member list each) stay far below the count bound; past
  // 256 MiB waiting they are shed at once.
  const std::string large(1024 * 1024, 'x');
  for (int i = 0; i < 400; ++i)
    a.publish(large);
  const auto shed = a.stats().publish_failed.load();
  CHECK(shed >= 400 - 256);
  // The PING watchdog (2 s) may have failed what was in flight too; while the link is up, what
  // failed is exactly what was shed.
  if (a.up())
    CHECK(shed == 400 - 256);
  server.thaw();
  CHECK(eventually([&] { return a.stats().published + a.stats().publish_failed == 400; }, 10s));
}

TEST_CASE("stop() from inside on_message ends delivery at once", "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra;
  auto a = ra.make(threads.io, server.url());
  std::atomic<int> delivered{0};
  storage::redis_pubsub* self = nullptr;
  storage::redis_pubsub b(
      threads.io, {.url = server.url(), .channel = "comb:test"},
      [&](const std::string&) {
        ++delivered;
        self->stop(); // on the strand, inside a hiredis callback
      },
      nullptr);
  self = &b;
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE(eventually([&] { return a.up() && b.up(); }));
  for (int i = 0; i < 5; ++i)
    a.publish("m" + std::to_string(i));
  REQUIRE(eventually([&] { return ra.message_count() == 5; }));
  CHECK(eventually([&] { return !b.up(); }));
  CHECK(delivered == 1);
}

TEST_CASE("stop() in the middle of a publishing burst accounts for every payload",
          "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra;
  auto a = ra.make(threads.io, server.url());
  REQUIRE_FALSE(a.start());
  REQUIRE(eventually([&] { return a.up(); }));

  std::atomic<bool> go_on{true};
  std::atomic<std::uint64_t> attempted{0};
  std::thread publisher([&] {
    for (; go_on; ++attempted)
      a.publish(std::string(200, 'x'));
  });
  REQUIRE(eventually([&] { return ra.message_count() > 100; }));
  a.stop();
  ra.closed = true;
  go_on = false;
  publisher.join();
  CHECK_FALSE(a.up());
  CHECK(ra.late_callbacks == 0);
  CHECK(eventually(
      [&] { return a.stats().published + a.stats().publish_failed == attempted.load(); }));
}

TEST_CASE("a server that accepts but never answers times out and is retried",
          "[integration][redis]") {
  tcp_socket silent(true); // the kernel completes the handshake; nobody ever replies
  io_threads threads;
  recorder ra;
  auto a = ra.make(threads.io, "redis://127.0.0.1:" + std::to_string(silent.port));
  REQUIRE_FALSE(a.start());
  CHECK(eventually([&] { return a.stats().reconnects >= 1; }, 5s));
  CHECK_FALSE(a.up());
  CHECK(ra.changes().empty());
}

TEST_CASE("start() reports a bad configuration as an error", "[integration][redis]") {
  io_threads threads;
  recorder r;
  for (const char* url :
       {"", "http://127.0.0.1:6379", "rediss://127.0.0.1:6379", "redis://", "redis://:6379",
        "redis://host:port", "redis://host:0", "redis://host:70000",
        "redis://host:", "redis://::1:6379", "redis://[::1", "redis://user@host:6379",
        "redis://user:@host:6379", "redis://host:6379/16", "redis://host:6379/x",
        "redis://host:6379?db=1", "redis://u:p%zz@host"}) {
    auto pubsub = r.make(threads.io, url);
    const auto error = pubsub.start();
    INFO(url);
    REQUIRE(error);
    CHECK(error->find("invalid Redis URL") != std::string::npos);
  }
  for (const char* url : {"redis://127.0.0.1:1", "redis://localhost", "redis://[::1]:1/0"}) {
    auto pubsub = r.make(threads.io, url);
    INFO(url);
    CHECK_FALSE(pubsub.start());
    CHECK(pubsub.start()); // twice is a mistake too
  }
  auto no_channel = r.make(threads.io, "redis://127.0.0.1:1", "");
  CHECK(no_channel.start());
}

TEST_CASE("with requirepass, the password from the URL logs in on every reconnect",
          "[integration][redis]") {
  redis_server server("--requirepass s3cret-pass");
  io_threads threads;
  recorder ra, rb;
  const std::string base = "127.0.0.1:" + std::to_string(server.port());
  auto a = ra.make(threads.io, "redis://:s3cret-pass@" + base);
  auto b = rb.make(threads.io, "redis://default:s3cret-pass@" + base + "/1");
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE(eventually([&] { return a.up() && b.up(); }));
  a.publish("before"); // pub/sub is server-wide: database 1 hears database 0
  REQUIRE(eventually([&] { return rb.message_count() == 1; }));

  server.stop();
  REQUIRE(eventually([&] { return !a.up() && !b.up(); }, 3s));
  server.start();
  REQUIRE(eventually([&] { return a.up() && b.up(); }, 5s));
  a.publish("after");
  REQUIRE(eventually([&] { return rb.message_count() == 2; }));
  CHECK_FALSE(a.stats().refused_login);
}

TEST_CASE("a wrong password is refused, reported and retried, never up",
          "[integration][redis]") {
  redis_server server("--requirepass s3cret-pass");
  io_threads threads;
  recorder r, n;
  const std::string base = "127.0.0.1:" + std::to_string(server.port());
  auto wrong = r.make(threads.io, "redis://:not-the-pass@" + base);
  auto none = n.make(threads.io, "redis://" + base);
  REQUIRE_FALSE(wrong.start());
  REQUIRE_FALSE(none.start());
  CHECK(eventually([&] { return wrong.stats().refused_login.load(); }));
  CHECK(eventually([&] { return wrong.stats().reconnects >= 2 && none.stats().reconnects >= 2; }, 9s));
  CHECK_FALSE(wrong.up());
  CHECK_FALSE(none.up()); // without AUTH the SUBSCRIBE is refused: never up either
  CHECK(r.changes() == std::vector<bool>{false}); // the refusal reported once, not every retry
  CHECK(n.changes().empty());
}

TEST_CASE("drain before stop: every message published before it reaches the other pods",
          "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra, rb;
  auto a = ra.make(threads.io, server.url());
  auto b = rb.make(threads.io, server.url());
  REQUIRE_FALSE(a.start());
  REQUIRE_FALSE(b.start());
  REQUIRE(eventually([&] { return a.up() && b.up(); }));
  // A stopping pod's writers' last events: published, then the link stops at once.
  constexpr std::size_t sent = 2000;
  for (std::size_t i = 0; i < sent; ++i)
    a.publish(std::to_string(i) + std::string(4096, 'x'));
  a.drain(5s);
  a.stop();
  CHECK(eventually([&] { return rb.message_count() == sent; }));
  CHECK(rb.message_count() == sent);
  CHECK(a.stats().publish_failed == 0);
}

TEST_CASE("drain gives up after its wait when Redis does not answer", "[integration][redis]") {
  redis_server server;
  io_threads threads;
  recorder ra;
  auto a = ra.make(threads.io, server.url());
  REQUIRE_FALSE(a.start());
  REQUIRE(eventually([&] { return a.up(); }));
  server.freeze();
  a.publish("never answered");
  const auto started = clock_type::now();
  a.drain(300ms);
  const auto waited = clock_type::now() - started;
  CHECK(waited >= 250ms);
  CHECK(waited < 2s);
  a.stop();
  server.thaw();
}
