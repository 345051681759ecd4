// SPDX-License-Identifier: MIT
#include "actors/bridge/peer_connector.hpp"

#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/messages.hpp"

namespace comb::actors {

void peer_connector(caf::blocking_actor* self, peer_connector_args args) {
  using namespace std::chrono_literals;
  std::chrono::milliseconds backoff = 200ms;
  bool running = true;
  auto stop = [&](caf::exit_msg&) { running = false; };
  while (running) {
    auto remote = self->system().middleman().remote_actor(args.host, args.port);
    if (!remote) {
      // Wait with backoff, but wake at once for an exit.
      self->receive(stop, caf::after(backoff) >> [] {});
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      continue;
    }
    backoff = 200ms;
    spdlog::info("bridge: cluster link to {}:{} up", args.host, args.port);
    self->monitor(*remote);
    self->send(args.bridge, peer_atom_v, *remote);
    bool linked = true;
    self->receive_while([&] { return linked && running; })(stop, [&](caf::down_msg&) {
      linked = false;
      spdlog::warn("bridge: cluster link to {}:{} lost; reconnecting", args.host, args.port);
    });
  }
}

} // namespace comb::actors
