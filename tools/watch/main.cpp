// SPDX-License-Identifier: MIT
// comb-watch: first-join alerts for owners and admins of a comb community, on the relay's public
// protocol only (NIP-01, NIP-11, NIP-42 and NIP-43 events).
#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fstream>
#include <iostream>

#include "protocol/nip19.hpp"
#include "tools/watch/ledger_file.hpp"
#include "tools/watch/watcher.hpp"

namespace {

using namespace comb;

struct command_line {
  std::string relay_url;
  std::string key_file;
  std::string state_dir;
  std::string exec_command;
  bool json = false;
};

std::optional<protocol::key_pair> read_key(const std::string& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text))
    return std::nullopt;
  auto secret = protocol::parse_secret_key(text);
  return secret ? protocol::key_pair::from_secret(*secret) : std::nullopt;
}

int fail(const std::string& message) {
  std::cerr << "comb-watch: " << message << "\n";
  return 2;
}

int run(const command_line& args) {
  auto relay = watch::parse_relay_url(args.relay_url);
  if (!relay)
    return fail("--relay must be a ws:// URL (wss:// is not supported yet): " + args.relay_url);
  auto key = read_key(args.key_file);
  if (!key)
    return fail("--key " + args.key_file + " holds no valid secret key (64 hex characters or nsec)");
  std::filesystem::path state_dir = args.state_dir.empty() ? watch::default_state_dir()
                                                           : std::filesystem::path(args.state_dir);
  std::error_code error;
  std::filesystem::create_directories(state_dir, error);
  if (error)
    return fail("cannot create the state folder " + state_dir.string() + ": " + error.message());
  auto viewer = protocol::to_hex(key->public_key());
  auto file = watch::ledger_path(state_dir, relay->community, viewer);
  auto ledger = watch::load_ledger(file);
  if (!ledger)
    return fail("the ledger " + file.string() + " is unreadable or damaged; move it away to re-seed");

  boost::asio::io_context io;
  watch::ledger_file store(file);
  watch::alert_reducer reducer(viewer, std::move(*ledger),
                               [store](const watch::ledger& next) { return store.save(next); });
  watch::watcher watcher(io, {*relay, args.json, args.exec_command}, std::move(*key),
                         std::move(reducer));
  boost::asio::signal_set stop_signals(io, SIGINT, SIGTERM);
  stop_signals.async_wait([&](const boost::system::error_code&, int) {
    watcher.flush_pending();
    io.stop();
  });
  std::cerr << "comb-watch: watching " << relay->community << " as "
            << protocol::encode_nip19("npub", protocol::array_from_hex<32>(viewer).value())
            << " (ledger " << file.string() << ")" << std::endl;
  boost::asio::co_spawn(io, watcher.run(), boost::asio::detached);
  io.run();
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"comb-watch: first-join alerts for owners and admins of a comb community"};
  command_line args;
  app.add_option("--relay", args.relay_url, "relay URL, ws://host:port")->required();
  app.add_option("--key", args.key_file, "file holding your secret key (64 hex or nsec)")
    ->required();
  app.add_option("--state", args.state_dir,
                 "folder for the ledgers (default $XDG_STATE_HOME/comb-watch)");
  app.add_option("--exec", args.exec_command,
                 "command run through /bin/sh -c for each alert, with COMB_ALERT_* set and the alert's JSON"
                 " on its standard input");
  app.add_flag("--json", args.json, "print alerts as JSON lines");
  CLI11_PARSE(app, argc, argv);
  return run(args);
}
