// SPDX-License-Identifier: MIT
// query: preloads a store through the relay, then times REQ -> EOSE for typical filters.
// connections: holds idle WebSocket connections and reads the relay's RSS before and after.
#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include "protocol/hex.hpp"
#include "tools/bench/cpu_meter.hpp"
#include "tools/bench/scenarios.hpp"

namespace comb::bench {
namespace {

constexpr std::size_t query_authors = 100;
constexpr long query_roots = 1000;

/// Fixed authors, so a later run with `--events 0` queries what an earlier one preloaded.
protocol::key_pair query_author(std::size_t i) {
  protocol::bytes32 secret{};
  secret.fill(0x42);
  secret[30] = static_cast<std::uint8_t>(i >> 8);
  secret[31] = static_cast<std::uint8_t>(i);
  return *protocol::key_pair::from_secret(secret);
}

std::string root_id(long r) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%08lx", r);
  return std::string(56, 'e') + buffer;
}

/// Publishes `count` events (90% kind 1, 10% kind 7, one of 1,000 `e` roots, one second apart
/// ending now) over many pipelined connections. Bounded by `max_seconds`.
bool preload(const options& opts, long count, double max_seconds, report& out) {
  std::vector<protocol::key_pair> authors;
  for (std::size_t i = 0; i < query_authors; ++i)
    authors.push_back(query_author(i));
  std::vector<std::string> frames;
  frames.reserve(static_cast<std::size_t>(count));
  auto now = unix_now();
  auto cpu = cpu_seconds();
  for (long i = 0; i < count; ++i) {
    const auto& author = authors[static_cast<std::size_t>(i) % authors.size()];
    auto ev = note(author, i, "preload", now - (count - i), i % 10 == 9 ? 7 : 1);
    ev.tags[0][1] = root_id(i % query_roots);
    frames.push_back(sign_event(author, std::move(ev)).frame);
  }
  out.figure("preload_presign_cpu_s", cpu_seconds() - cpu, "s");
  event_loop loop;
  int conns = 32;
  constexpr std::size_t window = 32;
  std::size_t next = 0, oks = 0, accepted = 0;
  std::vector<std::shared_ptr<client>> clients;
  auto keys = make_keys(static_cast<std::size_t>(conns), std::nullopt);
  auto feed = [&](std::size_t c) {
    if (next < frames.size())
      clients[c]->conn->send(std::move(frames[next++]));
  };
  for (std::size_t c = 0; c < static_cast<std::size_t>(conns); ++c)
    clients.push_back(connect_client(loop, opts, keys[c], [&, c](const relay_frame& f) {
      if (f.kind != relay_frame::type::ok)
        return;
      ++oks, accepted += f.accepted;
      feed(c);
    }));
  if (!await_ready(loop, clients, 15))
    return false;
  auto start = clock_type::now();
  for (std::size_t c = 0; c < clients.size(); ++c)
    for (std::size_t w = 0; w < window; ++w)
      feed(c);
  loop.run_until([&] { return oks >= next && next >= frames.size(); }, max_seconds);
  out.figure("preload_events_accepted", static_cast<double>(accepted));
  out.figure("preload_events_per_s", static_cast<double>(oks) / seconds_since(start),
             "/s (32 connections, 32 in flight each)");
  return true;
}

struct query_kind {
  const char* name;
  std::function<std::string(long)> filter;
};

} // namespace

int run_query(const options& opts, report& out) {
  long count = opts.events < 0 ? 100000 : opts.events;  // --events 0: query what is there
  int conns = opts.connections > 0 ? opts.connections : 4;
  double seconds = opts.seconds > 0 ? opts.seconds : 9;
  if (count > 0 && !preload(opts, count, 600, out))
    return 1;
  auto since = unix_now() - 3600;
  std::vector<std::string> author_hex;
  for (std::size_t i = 0; i < query_authors; ++i)
    author_hex.push_back(protocol::to_hex(query_author(i).public_key()));
  std::vector<query_kind> kinds = {
    {"authors_kinds_limit500", [&](long n) {
       return "{\"authors\":[\"" + author_hex[static_cast<std::size_t>(n) % query_authors]
              + "\"],\"kinds\":[1],\"limit\":500}";
     }},
    {"e_tag", [&](long n) { return "{\"#e\":[\"" + root_id(n * 7 % query_roots) + "\"],\"limit\":500}"; }},
    {"kinds_since", [&](long) {
       return "{\"kinds\":[7],\"since\":" + std::to_string(since) + ",\"limit\":500}";
     }},
  };
  event_loop loop;
  auto keys = make_keys(static_cast<std::size_t>(conns), opts.key);
  struct state { long serial = 0; std::size_t received = 0; clock_type::time_point sent; };
  std::vector<state> states(static_cast<std::size_t>(conns));
  std::vector<std::shared_ptr<client>> clients;
  const query_kind* current = nullptr;
  std::size_t timed = opts.shapes.empty() ? kinds.size() : opts.shapes.size();
  double phase_seconds = seconds / static_cast<double>(std::max<std::size_t>(timed, 1));
  clock_type::time_point phase_start;
  samples latency;
  std::size_t done = 0, events = 0, outstanding = 0;
  long serial = 0;
  auto ask = [&](std::size_t c) {
    if (seconds_since(phase_start) >= phase_seconds)
      return;
    auto& s = states[c];
    s = {++serial, 0, clock_type::now()};
    clients[c]->conn->send("[\"REQ\",\"q" + std::to_string(s.serial) + "\"," + current->filter(s.serial) + "]");
    ++outstanding;
  };
  for (std::size_t c = 0; c < static_cast<std::size_t>(conns); ++c)
    clients.push_back(connect_client(loop, opts, keys[c], [&, c](const relay_frame& f) {
      auto& s = states[c];
      if (f.kind == relay_frame::type::event) {
        ++s.received;
      } else if (f.kind == relay_frame::type::eose || f.kind == relay_frame::type::closed) {
        if (f.subscription != "q" + std::to_string(s.serial))
          return;
        if (f.kind == relay_frame::type::closed)
          std::fprintf(stderr, "comb-bench: CLOSED %s\n", f.text.c_str());
        latency.add(std::chrono::duration<double, std::milli>(clock_type::now() - s.sent).count());
        ++done, --outstanding, events += s.received;
        clients[c]->conn->send("[\"CLOSE\",\"" + f.subscription + "\"]");
        ask(c);
      }
    }));
  if (!await_ready(loop, clients, 15))
    return 1;
  auto cpu = cpu_seconds();
  out.figure("connections", conns);
  for (const auto& kind : kinds) {
    if (!opts.shapes.empty()
        && std::find(opts.shapes.begin(), opts.shapes.end(), kind.name) == opts.shapes.end())
      continue;
    current = &kind;
    latency = {};
    done = events = 0;
    cpu_meter meter(opts);
    phase_start = clock_type::now();
    for (std::size_t c = 0; c < clients.size(); ++c)
      ask(c);
    loop.run_until([&] { return outstanding == 0; }, phase_seconds + 10);
    double elapsed = seconds_since(phase_start);
    std::string p = std::string(kind.name) + "_";
    out.figure(p + "reqs_per_s", static_cast<double>(done) / elapsed, "REQ->EOSE/s");
    out.figure(p + "events_per_req", done ? static_cast<double>(events) / static_cast<double>(done) : 0);
    out.figure(p + "p50_ms", latency.quantile(0.5), "ms REQ->EOSE");
    out.figure(p + "p99_ms", latency.quantile(0.99), "ms");
    meter.add_to(out, p, static_cast<double>(events), "event");
  }
  out.figure("cpu_s", cpu_seconds() - cpu, "s generator CPU while querying");
  return 0;
}

int run_connections(const options& opts, report& out) {
  std::size_t count = static_cast<std::size_t>(opts.connections > 0 ? opts.connections : 1000);
  double seconds = opts.seconds > 0 ? opts.seconds : 60;
  event_loop loop;
  loop.run_until([] { return false; }, 0.5);
  long before = opts.relay_pid ? rss_kib(opts.relay_pid) : -1;
  auto own_before = rss_kib(getpid());
  auto key = opts.key ? *opts.key : protocol::key_pair::generate();  // one identity: cheap AUTH
  std::vector<std::shared_ptr<client>> clients;
  std::size_t opened = 0, failed = 0;
  auto start = clock_type::now();
  auto cpu = cpu_seconds();
  // At most 256 handshakes in flight, so the listen backlog never overflows.
  while (clients.size() < count && seconds_since(start) < seconds) {
    std::size_t pending = 0;
    for (const auto& c : clients)
      pending += !c->open && !c->closed;
    for (; pending < 256 && clients.size() < count; ++pending)
      clients.push_back(connect_client(loop, opts, key, {}));
    loop.run_until([] { return false; }, 0.01);
  }
  await_ready(loop, clients, std::max(5.0, seconds - seconds_since(start)));
  for (const auto& c : clients)
    opened += c->open, failed += c->closed;
  double open_s = seconds_since(start);
  loop.run_until([] { return false; }, 3.0);  // let the relay settle
  long after = opts.relay_pid ? rss_kib(opts.relay_pid) : -1;
  std::size_t still = 0;
  for (const auto& c : clients)
    still += c->open;
  out.figure("connections_requested", static_cast<double>(count));
  out.figure("connections_open", static_cast<double>(still));
  out.figure("connections_failed", static_cast<double>(failed));
  out.note("client_deflate", opts.deflate ? "offered" : "not offered");
  out.figure("open_s", open_s, "s to open and authenticate all");
  if (before >= 0 && after >= 0) {
    out.figure("relay_rss_before_kib", static_cast<double>(before), "KiB");
    out.figure("relay_rss_after_kib", static_cast<double>(after), "KiB");
    out.figure("relay_kib_per_connection",
               still ? static_cast<double>(after - before) / static_cast<double>(still) : 0,
               "KiB (target < 20)");
  } else {
    std::printf("(no --relay-pid: relay RSS not measured)\n");
  }
  out.figure("bench_kib_per_connection",
             still ? static_cast<double>(rss_kib(getpid()) - own_before) / static_cast<double>(still) : 0, "KiB");
  out.figure("cpu_s", cpu_seconds() - cpu, "s generator CPU");
  for (auto& c : clients)
    c->conn->close();
  loop.run_until([&] {
    for (const auto& c : clients)
      if (c->open)
        return false;
    return true;
  }, 10);
  return opened == count ? 0 : 1;
}

} // namespace comb::bench
