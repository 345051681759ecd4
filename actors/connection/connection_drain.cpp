// SPDX-License-Identifier: MIT
// A connection's part of a graceful stop: what it was asked is answered, and the socket closes
// with 1001 once nothing is left.
#include "actors/connection/connection_drain.hpp"

namespace comb::actors {

namespace {

bool answered_everything(const connection_state& st) {
  return st.logic->events_in_flight() == 0 && st.awaiting_membership.empty()
         && st.awaiting_invite.empty() && st.joins_awaiting_auth.empty() && st.awaiting_auth.empty()
         && st.queries_under_way.empty() && st.waiting_queries.empty() && st.counts_in_flight.empty();
}

} // namespace

void on_drain(connection_self self) {
  auto& st = self->state;
  // The writer's OKs since the last event (it answers on the socket, this actor counts them).
  st.logic->events_answered(st.events_answered->exchange(0, std::memory_order_acquire));
  if (!answered_everything(st)) {
    self->delayed_send(self, drain_check_interval, drain_atom_v);
    return;
  }
  // Queued frames go out before the close frame: the answers just counted reach the client.
  st.args.sink->close(close_reason::going_away);
}

} // namespace comb::actors
