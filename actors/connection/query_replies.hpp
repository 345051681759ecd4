// SPDX-License-Identifier: MIT
#pragma once

#include "actors/connection/connection_actor.hpp"

namespace comb::actors {

/// A history chunk or COUNT answer from a reader: answered now, or, read at a community state
/// this pod does not hold yet, once it does (replies_awaiting_state).
void on_query_reply(connection_self self, query_reply reply);

/// (state_check_atom): what waits for the pod to catch up goes now if it may.
void on_state_check(connection_self self);

} // namespace comb::actors
