// SPDX-License-Identifier: MIT
#include "actors/bridge/peer_connector.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/bridge/gatekeeper.hpp"
#include "actors/messages.hpp"

namespace comb::actors {

void peer_connector(caf::blocking_actor* self, peer_connector_args args) {
  using namespace std::chrono_literals;
  std::chrono::milliseconds backoff = 200ms;
  bool running = true;
  auto stop = [&](caf::exit_msg&) { running = false; };
  while (running) {
    auto remote = args.tls ? caf::openssl::remote_actor(self->system(), args.host, args.port)
                           : self->system().middleman().remote_actor(args.host, args.port);
    if (!remote) {
      // Wait with backoff, but wake at once for an exit.
      self->receive(stop, caf::after(backoff) >> [] {});
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      continue;
    }
    backoff = 200ms;
    spdlog::info("bridge: cluster link to {}:{} up", args.host, args.port);
    self->monitor(*remote);
    auto where = args.host + ":" + std::to_string(args.port);
    self->send(args.gate, gate_order{gate_order::kind::dialed, *remote, where});
    bool linked = true;
    self->receive_while([&] { return linked && running; })(stop, [&](caf::down_msg&) {
      linked = false;
      spdlog::warn("bridge: cluster link to {} lost; reconnecting", where);
    });
    self->send(args.gate, gate_order{gate_order::kind::lost, *remote, where});
  }
}

} // namespace comb::actors
