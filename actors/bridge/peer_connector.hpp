// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <string>

namespace comb::actors {

struct peer_connector_args {
  std::string host;
  std::uint16_t port = 0;
  caf::actor gate; ///< the gatekeeper: it alone talks to the peer
  bool tls = false; ///< dial with CAF's OpenSSL module (mutual TLS)
};

/// Keeps one CAF cluster link to a peer pod up (run detached: connecting blocks). Connects
/// with backoff, hands the peer's gatekeeper to ours (which runs the handshake; this actor never
/// sends to the peer, so the network never learns its address), waits until the link drops,
/// reports it, and connects again. Ends when told to exit.
void peer_connector(caf::blocking_actor* self, peer_connector_args args);

} // namespace comb::actors
