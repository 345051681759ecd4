// SPDX-License-Identifier: MIT
#pragma once

#include "actors/connection/connection_actor.hpp"

namespace comb::actors {

/// (resume_atom): a reader ended a query and this connection had waited longest; the room is
/// kept for it until now. Starts what may start, or passes the room on.
void on_resume(connection_self self);

} // namespace comb::actors
