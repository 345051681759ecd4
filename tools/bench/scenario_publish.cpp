// SPDX-License-Identifier: MIT
// ingest: N connections publish pre-signed events, each waiting for its OK before the next.
// fanout: S subscribers hold a matching REQ while events are published at a fixed rate.
#include <cstdio>
#include <random>
#include <thread>
#include <unordered_map>

#include "protocol/hex.hpp"
#include "tools/bench/cpu_meter.hpp"
#include "tools/bench/scenarios.hpp"

namespace comb::bench {

std::string run_tag() {
  std::random_device random;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "bench-%08x", random());
  return buffer;
}

bool await_ready(event_loop& loop, const std::vector<std::shared_ptr<client>>& clients,
                 double max_seconds) {
  auto all_open = [&] {
    for (const auto& c : clients)
      if (!c->open && !c->closed)
        return false;
    return true;
  };
  loop.run_until(all_open, max_seconds);
  loop.run_until([] { return false; }, 0.3);  // a relay that challenges does so at once
  return loop.run_until([&] {
    for (const auto& c : clients)
      if (!c->open || (!c->challenge.empty() && !c->authed))
        return false;
    return true;
  }, max_seconds);
}

namespace {

/// The first 16 hex digits of an id as a number: a cheap key for matching deliveries.
std::uint64_t id_key(std::string_view hex) {
  std::uint64_t key = 0;
  for (std::size_t i = 0; i < 16 && i < hex.size(); ++i)
    key = key << 4 | static_cast<std::uint64_t>(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
  return key;
}

std::vector<signed_event> presign(long count, std::size_t authors, const options& opts,
                                  const std::string& tag, report& out) {
  auto keys = make_keys(authors, opts.key);
  auto cpu = cpu_seconds();
  std::vector<signed_event> corpus;
  corpus.reserve(static_cast<std::size_t>(count));
  auto now = unix_now();
  for (long i = 0; i < count; ++i) {
    const auto& author = keys[static_cast<std::size_t>(i) % keys.size()];
    corpus.push_back(sign_event(author, note(author, i, tag, now)));
  }
  out.figure("presigned_events", static_cast<double>(count));
  out.figure("presign_cpu_s", cpu_seconds() - cpu, "s");
  return corpus;
}

} // namespace

int run_ingest(const options& opts, report& out) {
  long count = opts.events > 0 ? opts.events : 20000;
  int conns = opts.connections > 0 ? opts.connections : 16;
  double seconds = opts.seconds > 0 ? opts.seconds : 10;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // Measured before and after the timed phase; the higher (the less disturbed) is the ceiling.
  double verify_before = verify_rate(1.0);
  out.figure("cores", cores);
  auto corpus = presign(count, 64, opts, run_tag(), out);

  event_loop loop;
  struct slot { std::string id; clock_type::time_point sent; };
  std::vector<slot> in_flight(static_cast<std::size_t>(conns));
  std::vector<std::shared_ptr<client>> clients;
  std::size_t next = 0, pending = 0, accepted = 0, rejected = 0;
  std::string first_rejection;
  samples latency;
  clock_type::time_point start, last_ok;
  bool running = false;
  auto keys = make_keys(static_cast<std::size_t>(conns), opts.key);
  auto send_next = [&](std::size_t c) {
    if (next >= corpus.size() || seconds_since(start) >= seconds)
      return;
    in_flight[c] = {corpus[next].id_hex, clock_type::now()};
    clients[c]->conn->send(corpus[next].frame);
    ++next, ++pending;
  };
  for (std::size_t c = 0; c < static_cast<std::size_t>(conns); ++c)
    clients.push_back(connect_client(loop, opts, keys[c], [&, c](const relay_frame& f) {
      if (!running || f.kind != relay_frame::type::ok || f.text != in_flight[c].id)
        return;
      --pending;
      last_ok = clock_type::now();
      latency.add(std::chrono::duration<double, std::milli>(last_ok - in_flight[c].sent).count());
      if (f.accepted)
        ++accepted;
      else if (++rejected == 1)
        first_rejection = f.message;
      send_next(c);
    }));
  if (!await_ready(loop, clients, 15)) {
    std::fprintf(stderr, "comb-bench: connections did not open/authenticate\n");
    return 1;
  }
  auto cpu = cpu_seconds();
  cpu_meter meter(opts);
  start = last_ok = clock_type::now();
  running = true;
  for (std::size_t c = 0; c < clients.size(); ++c)
    send_next(c);
  loop.run_until([&] { return pending == 0; }, seconds + 15);
  double elapsed = std::chrono::duration<double>(last_ok - start).count();
  double cpu_timed = cpu_seconds() - cpu;
  double verify = std::max(verify_before, verify_rate(1.0));
  out.figure("verify_per_s_one_core", verify, "/s (protocol::verify_schnorr, best of before/after)");
  out.figure("connections", conns);
  out.figure("events_sent", static_cast<double>(next));
  out.figure("events_accepted", static_cast<double>(accepted));
  out.figure("events_rejected", static_cast<double>(rejected));
  if (!first_rejection.empty())
    out.note("first_rejection", first_rejection);
  out.figure("elapsed_s", elapsed, "s");
  double rate = elapsed > 0 ? static_cast<double>(accepted) / elapsed : 0;
  out.figure("events_per_s", rate, "accepted/s");
  out.figure("p50_ms", latency.quantile(0.5), "ms EVENT->OK");
  out.figure("p99_ms", latency.quantile(0.99), "ms");
  out.figure("ceiling_per_s", verify * cores, "/s (verify rate x cores)");
  out.figure("ratio_to_ceiling", rate / (verify * cores), "(target >= 0.35)");
  out.figure("cpu_s", cpu_timed, "s generator CPU while timed");
  meter.add_to(out, "", static_cast<double>(accepted), "event");
  return pending == 0 ? 0 : 1;
}

int run_fanout(const options& opts, report& out) {
  int subs = opts.subscribers > 0 ? opts.subscribers : 10;
  double rate = opts.rate > 0 ? opts.rate : 100;
  double seconds = opts.seconds > 0 ? opts.seconds : 10;
  long count = opts.events > 0 ? opts.events : static_cast<long>(rate * seconds);
  int publishers = opts.connections > 0 ? opts.connections : 4;
  auto tag = run_tag();
  auto corpus = presign(count, 16, opts, tag, out);
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < corpus.size(); ++i)
    index.emplace(id_key(corpus[i].id_hex), i);
  std::vector<clock_type::time_point> sent_at(corpus.size());

  event_loop loop;
  std::size_t eose = 0, deliveries = 0, oks = 0, accepted = 0, sent = 0;
  samples latency;
  clock_type::time_point start, last_delivery;
  auto keys = make_keys(static_cast<std::size_t>(subs + publishers), opts.key);
  std::vector<std::shared_ptr<client>> subscribers, pubs;
  for (int s = 0; s < subs; ++s)
    subscribers.push_back(connect_client(loop, opts, keys[static_cast<std::size_t>(s)], [&](const relay_frame& f) {
      if (f.kind == relay_frame::type::eose) {
        ++eose;
      } else if (f.kind == relay_frame::type::event) {
        auto found = index.find(id_key(f.event_id));
        if (found == index.end())
          return;
        ++deliveries;
        last_delivery = clock_type::now();
        latency.add(std::chrono::duration<double, std::milli>(last_delivery - sent_at[found->second]).count());
      } else if (f.kind == relay_frame::type::closed) {
        std::fprintf(stderr, "comb-bench: subscription closed: %s\n", f.text.c_str());
      }
    }));
  for (int p = 0; p < publishers; ++p)
    pubs.push_back(connect_client(loop, opts, keys[static_cast<std::size_t>(subs + p)], [&](const relay_frame& f) {
      if (f.kind == relay_frame::type::ok)
        ++oks, accepted += f.accepted;
    }));
  auto everyone = subscribers;
  everyone.insert(everyone.end(), pubs.begin(), pubs.end());
  if (!await_ready(loop, everyone, 30)) {
    std::fprintf(stderr, "comb-bench: connections did not open/authenticate\n");
    return 1;
  }
  std::string req = "[\"REQ\",\"fan\",{\"kinds\":[1],\"#t\":[\"" + tag + "\"]}]";
  for (auto& s : subscribers)
    s->conn->send(req);
  if (!loop.run_until([&] { return eose >= subscribers.size(); }, 30)) {
    std::fprintf(stderr, "comb-bench: only %zu of %d subscriptions reached EOSE\n", eose, subs);
    return 1;
  }
  auto cpu = cpu_seconds();
  cpu_meter meter(opts);
  start = last_delivery = clock_type::now();
  // Publishes what is due every 2 ms, round-robin over the publisher connections.
  std::function<void()> tick = [&] {
    auto due = std::min(corpus.size(), static_cast<std::size_t>(seconds_since(start) * rate) + 1);
    for (; sent < due; ++sent) {
      sent_at[sent] = clock_type::now();
      pubs[sent % pubs.size()]->conn->send(corpus[sent].frame);
    }
    if (sent < corpus.size() && seconds_since(start) < seconds)
      loop.after(0.002, tick);
  };
  tick();
  std::size_t expected = 0;
  loop.run_until([&] {
    expected = sent * subscribers.size();
    bool publishing = sent < corpus.size() && seconds_since(start) < seconds;
    return !publishing && deliveries >= expected;
  }, seconds + 10);
  double elapsed = std::chrono::duration<double>(last_delivery - start).count();
  out.figure("subscribers", subs);
  out.figure("publish_rate", rate, "events/s offered");
  out.figure("events_published", static_cast<double>(sent));
  out.figure("events_accepted", static_cast<double>(accepted));
  out.figure("deliveries", static_cast<double>(deliveries));
  out.figure("delivered_fraction", expected ? static_cast<double>(deliveries) / static_cast<double>(expected) : 0);
  out.figure("elapsed_s", elapsed, "s first publish -> last delivery");
  out.figure("deliveries_per_s", elapsed > 0 ? static_cast<double>(deliveries) / elapsed : 0, "/s");
  out.figure("p50_ms", latency.quantile(0.5), "ms publish->deliver");
  out.figure("p99_ms", latency.quantile(0.99), "ms");
  out.figure("cpu_s", cpu_seconds() - cpu, "s generator CPU while timed");
  meter.add_to(out, "", static_cast<double>(deliveries), "delivery");
  return deliveries >= expected ? 0 : 1;
}

} // namespace comb::bench
