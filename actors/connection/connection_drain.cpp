// SPDX-License-Identifier: MIT
// A connection's part of a graceful stop: what it was asked before the signal is answered,
// nothing new is taken, and the socket closes with 1001 once nothing is left.
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
  st.draining = true;
  // The writer's OKs since the last event (it answers on the socket, this actor counts them).
  st.logic->events_answered(st.events_answered->exchange(0, std::memory_order_acquire));
  if (!answered_everything(st)) {
    self->delayed_send(self, drain_check_interval, drain_atom_v);
    return;
  }
  // Queued frames go out before the close frame: the answers just counted reach the client.
  st.args.sink->close(close_reason::going_away);
}

bool refused_while_draining(const connection_state& st, const protocol::client_message& message) {
  return st.draining
         && (std::holds_alternative<protocol::event_message>(message)
             || std::holds_alternative<protocol::req_message>(message)
             || std::holds_alternative<protocol::count_message>(message));
}

const protocol::rejection& draining_refusal() {
  static const protocol::rejection refusal{protocol::reason::error,
                                           "the relay is restarting; send this again after reconnecting"};
  return refusal;
}

} // namespace comb::actors
