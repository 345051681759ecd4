// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>

#include "actors/connection/connection_actor.hpp"

namespace comb::actors {

/// How often a draining connection looks again whether everything it was asked is answered.
inline constexpr std::chrono::milliseconds drain_check_interval{20};

/// (drain_atom) The pod is stopping: the connection closes with 1001 as soon as everything it
/// was asked is answered (OKs from storage, membership and room outcomes, invites, queries,
/// joins waiting for AUTH). Until then it sends itself drain_atom again every
/// drain_check_interval; the pod's own deadline cuts what is still open after it. Frames read
/// meanwhile are served as usual, not refused: neither welshman nor nostr-tools sends again a
/// publish or a REQ refused with `error:` (a refused live REQ left a Flotilla space without
/// updates until reload), while welshman re-sends, on its reconnect, what got no answer.
void on_drain(connection_self self);

} // namespace comb::actors
