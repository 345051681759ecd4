// SPDX-License-Identifier: MIT
// comb-bench: a load generator for any NIP-01 relay on this machine (loopback only).
//   comb-bench SCENARIO --relay URL [--events N] [--connections N] [--subscribers N]
//              [--seconds S] [--key FILE] [--json] [--rate R] [--relay-pid PID] [--deflate]
//              [--members N] [--db-pids PID,...]
// SCENARIO: ingest, fanout, query, connections, membership. Every run is bounded in count and
// time; the corpus is signed before the clock starts; --json prints one JSON object last.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>

#include "protocol/nip19.hpp"
#include "tools/bench/scenarios.hpp"

using namespace comb::bench;

int main(int argc, char** argv) {
  options opts;
  std::string key_file;
  CLI::App app{"comb-bench: load generator for a NIP-01 relay on loopback"};
  app.add_option("scenario", opts.scenario, "ingest | fanout | query | connections | membership")
    ->required()
    ->check(CLI::IsMember({"ingest", "fanout", "query", "connections", "membership"}));
  app.add_option("--relay", opts.relay, "ws:// URL of the relay (loopback hosts only)")->required();
  app.add_option("--events", opts.events, "events (ingest, fanout), preload size (query; 0: none), "
                                          "timed joins (membership)");
  app.add_option("--connections", opts.connections, "connections (ingest, query, connections), "
                                                    "publishers (fanout), joiners (membership)");
  app.add_option("--subscribers", opts.subscribers, "subscribers (fanout)");
  app.add_option("--seconds", opts.seconds, "time bound of the timed phase");
  app.add_option("--rate", opts.rate, "events published per second (fanout)");
  app.add_option("--relay-pid", opts.relay_pid, "relay process: CPU per operation of each timed "
                                              "phase, RSS (connections)");
  app.add_option("--db-pids", opts.db_pids, "database processes (comma-separated): CPU per operation")
    ->delimiter(',');
  app.add_flag("--deflate", opts.deflate, "offer permessage-deflate (default: not offered)");
  app.add_option("--members", opts.members, "grow the community to this many members first (membership)");
  app.add_option("--key", key_file, "secret key file (64 hex or nsec) to sign with instead of fresh keys");
  app.add_option("--shapes", opts.shapes, "query: shapes to time, comma-separated (default: all)")
    ->delimiter(',');
  app.add_flag("--json", opts.json, "print one JSON object with the figures as the last line");
  CLI11_PARSE(app, argc, argv);

  auto where = parse_loopback_url(opts.relay);
  if (!where)
    return 2;
  opts.where = *where;
  if (!key_file.empty()) {
    std::ifstream in(key_file);
    std::string text;
    in >> text;
    auto secret = comb::protocol::parse_secret_key(text);
    if (secret)
      opts.key = comb::protocol::key_pair::from_secret(*secret);
    if (!opts.key) {
      std::fprintf(stderr, "comb-bench: %s holds no valid secret key\n", key_file.c_str());
      return 2;
    }
  }
  std::map<std::string, int (*)(const options&, report&)> scenarios = {
    {"ingest", run_ingest}, {"fanout", run_fanout}, {"query", run_query},
    {"connections", run_connections}, {"membership", run_membership}};
  report out(opts.scenario);
  out.note("relay", opts.relay);
  int code = 1;
  try {
    code = scenarios.at(opts.scenario)(opts, out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "comb-bench: %s\n", e.what());
  }
  out.figure("exit_code", code);
  if (opts.json)
    out.print_json();
  return code;
}
