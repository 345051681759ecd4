// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <string>

namespace comb::actors {

struct peer_connector_args {
  std::string host;
  std::uint16_t port = 0;
  caf::actor bridge;
};

/// Keeps one CAF cluster link to a peer pod up (run detached: connecting blocks). Connects
/// with backoff, hands the peer's bridge to ours (which authenticates with the shared secret),
/// waits until the link drops, and connects again. Ends when told to exit.
void peer_connector(caf::blocking_actor* self, peer_connector_args args);

} // namespace comb::actors
