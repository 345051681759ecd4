// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>

#include "actors/connection/connection_actor.hpp"

namespace comb::actors {

/// How often a draining connection looks again whether everything it was asked is answered.
inline constexpr std::chrono::milliseconds drain_check_interval{20};

/// (drain_atom) The pod is stopping: the connection takes no new work, answers everything it
/// was asked before (OKs from storage, membership and room outcomes, invites, queries, joins
/// waiting for AUTH), then closes with 1001. Until then it sends itself drain_atom again every
/// drain_check_interval; the pod's own deadline cuts what is still open after it.
void on_drain(connection_self self);

/// True when the connection is draining and `message` asks for new work (an EVENT, REQ or
/// COUNT), which is then refused with draining_refusal(). CLOSE and AUTH are still taken: a
/// join waiting for AUTH is answered when it comes.
[[nodiscard]] bool refused_while_draining(const connection_state& st,
                                          const protocol::client_message& message);

[[nodiscard]] const protocol::rejection& draining_refusal();

} // namespace comb::actors
