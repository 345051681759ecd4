// SPDX-License-Identifier: MIT
// membership (comb, open community): grows the community to --members through NIP-43 joins,
// times one join at a time (the latency of one membership write), then many concurrent joiners
// (joins/s), and checks that the newest 13534 list counts every admitted member.
#include <cstdio>

#include "tools/bench/scenarios.hpp"

namespace comb::bench {
namespace {

struct joiner {
  protocol::key_pair key;
  signed_event join;
};

std::vector<joiner> presign_joins(std::size_t count) {
  std::vector<joiner> out;
  out.reserve(count);
  auto now = unix_now();
  for (std::size_t i = 0; i < count; ++i) {
    auto key = protocol::key_pair::generate();
    protocol::event ev;
    ev.kind = 28934;
    ev.created_at = now;
    ev.tags = {{"-"}};
    auto join = sign_event(key, std::move(ev));
    out.push_back({key, std::move(join)});
  }
  return out;
}

struct join_totals {
  std::size_t admitted = 0, duplicate = 0, refused = 0;
  std::string first_refusal;
  samples latency;
};

/// Runs joins from `pool` (from `next` on) over `conns` connections until `limit` joins are
/// done or `seconds` pass. Each join: AUTH as the joiner (signed now, for the connection's
/// challenge), then its pre-signed 28934; the latency is join -> OK.
double run_joins(const options& opts, int conns, const std::vector<joiner>& pool, std::size_t& next,
                 std::size_t limit, double seconds, join_totals& totals) {
  event_loop loop;
  struct state { std::size_t job = 0; std::string auth_id; clock_type::time_point sent; bool busy = false; };
  std::vector<state> states(static_cast<std::size_t>(conns));
  std::vector<std::shared_ptr<client>> clients;
  std::size_t end = std::min(pool.size(), next + limit), busy = 0;
  auto start = clock_type::now();
  auto begin = [&](std::size_t c) {
    if (next >= end || seconds_since(start) >= seconds)
      return;
    auto& s = states[c];
    s.job = next++;
    s.busy = true, ++busy;
    auto frame = auth_frame(pool[s.job].key, opts.where.url, clients[c]->challenge);
    s.auth_id = frame.substr(frame.find("\"id\":\"") + 6, 64);
    clients[c]->conn->send(std::move(frame));
  };
  auto keys = make_keys(static_cast<std::size_t>(conns), std::nullopt);
  for (std::size_t c = 0; c < static_cast<std::size_t>(conns); ++c)
    clients.push_back(connect_client(loop, opts, keys[c], [&, c](const relay_frame& f) {
      auto& s = states[c];
      if (f.kind != relay_frame::type::ok || !s.busy)
        return;
      if (f.text == s.auth_id) {
        if (!f.accepted) {
          std::fprintf(stderr, "comb-bench: AUTH refused: %s\n", f.message.c_str());
          s.busy = false, --busy;
          return;
        }
        s.sent = clock_type::now();
        clients[c]->conn->send(pool[s.job].join.frame);
      } else if (f.text == pool[s.job].join.id_hex) {
        totals.latency.add(std::chrono::duration<double, std::milli>(clock_type::now() - s.sent).count());
        if (f.accepted && f.message.starts_with("duplicate:"))
          ++totals.duplicate;
        else if (f.accepted)
          ++totals.admitted;
        else if (++totals.refused == 1)
          totals.first_refusal = f.message;
        s.busy = false, --busy;
        begin(c);
      }
    }));
  if (!await_ready(loop, clients, 15)) {
    std::fprintf(stderr, "comb-bench: joiner connections did not open\n");
    return 0;
  }
  for (const auto& c : clients)
    if (c->challenge.empty()) {
      std::fprintf(stderr, "comb-bench: the relay sent no AUTH challenge (membership needs NIP-42)\n");
      return 0;
    }
  start = clock_type::now();
  for (std::size_t c = 0; c < clients.size(); ++c)
    begin(c);
  loop.run_until([&] { return busy == 0; }, seconds + 30);
  return seconds_since(start);
}

/// Members in the newest 13534 list, or -1.
long listed_members(const options& opts) {
  event_loop loop;
  long members = -1;
  bool eose = false;
  auto c = connect_client(loop, opts, protocol::key_pair::generate(), [&](const relay_frame& f) {
    if (f.kind == relay_frame::type::event) {
      members = 0;
      for (auto at = f.raw.find("[\"member\","); at != std::string_view::npos; at = f.raw.find("[\"member\",", at + 1))
        ++members;
    } else if (f.kind == relay_frame::type::eose || f.kind == relay_frame::type::closed) {
      eose = true;
    }
  });
  if (!await_ready(loop, {c}, 10))
    return -1;
  c->conn->send("[\"REQ\",\"list\",{\"kinds\":[13534],\"limit\":1}]");
  loop.run_until([&] { return eose; }, 30);
  return members;
}

} // namespace

int run_membership(const options& opts, report& out) {
  int conns = opts.connections > 0 ? opts.connections : 16;
  double seconds = opts.seconds > 0 ? opts.seconds : 10;
  std::size_t measured = static_cast<std::size_t>(opts.events > 0 ? opts.events : 5000);
  constexpr std::size_t single = 20;
  long initial = std::max(0L, listed_members(opts));
  out.figure("members_at_start", static_cast<double>(initial));
  std::size_t grow = opts.members > initial ? static_cast<std::size_t>(opts.members - initial) : 0;
  auto cpu = cpu_seconds();
  auto pool = presign_joins(grow + single + measured);
  out.figure("presign_cpu_s", cpu_seconds() - cpu, "s");
  std::size_t next = 0;
  join_totals growth;
  if (grow > 0) {
    double took = run_joins(opts, 32, pool, next, grow, 600, growth);
    out.figure("grow_joins_admitted", static_cast<double>(growth.admitted));
    out.figure("grow_joins_per_s", static_cast<double>(growth.admitted) / std::max(took, 1e-9), "/s (32 joiners, growing)");
  }
  long before = listed_members(opts);
  out.figure("members_before_timing", static_cast<double>(before));

  join_totals one;
  run_joins(opts, 1, pool, next, single, seconds, one);
  out.figure("single_join_p50_ms", one.latency.quantile(0.5), "ms (one joiner at a time)");
  out.figure("single_join_max_ms", one.latency.quantile(1.0), "ms");

  join_totals many;
  cpu = cpu_seconds();
  double took = run_joins(opts, conns, pool, next, measured, seconds, many);
  double rate = static_cast<double>(many.admitted) / std::max(took, 1e-9);
  out.figure("joiners", conns);
  out.figure("joins_admitted", static_cast<double>(many.admitted));
  out.figure("joins_duplicate", static_cast<double>(many.duplicate));
  out.figure("joins_refused", static_cast<double>(many.refused));
  if (!many.first_refusal.empty())
    out.note("first_refusal", many.first_refusal);
  out.figure("elapsed_s", took, "s");
  out.figure("joins_per_s", rate, "/s (target >= 200 at 10,000 members)");
  out.figure("p50_ms", many.latency.quantile(0.5), "ms join->OK");
  out.figure("p99_ms", many.latency.quantile(0.99), "ms");
  out.figure("cpu_s", cpu_seconds() - cpu, "s generator CPU while timed");

  long after = listed_members(opts);
  long expected = before + static_cast<long>(one.admitted + many.admitted);
  out.figure("members_after", static_cast<double>(after));
  out.figure("members_expected", static_cast<double>(expected));
  out.note("list_invariant", after == expected ? "intact" : "BROKEN");
  return after == expected ? 0 : 1;
}

} // namespace comb::bench
