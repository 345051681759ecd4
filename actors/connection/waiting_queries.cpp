// SPDX-License-Identifier: MIT
// When a connection's REQs and COUNTs start: within its own places, and within the pod's bound
// on what the storage readers hold queued (reader_waits), where it waits its turn.
#include "actors/connection/waiting_queries.hpp"

#include "actors/connection/count_requests.hpp"

namespace comb::actors {

const caf::actor& reader_for(connection_self self) {
  const auto& args = self->state.args;
  return pick_reader(args.readers, args.readers_waiting.get(), args.owner);
}

namespace {

/// The pod's readers hold their bound: the next query stays here until a reader ends one.
void wait_for_room(connection_self self) {
  auto& st = self->state;
  if (std::exchange(*st.waiting_for_room, true))
    return;
  bump(st.args.metrics->queries_waited);
  st.args.readers_waiting->wait_for_room(caf::actor_cast<caf::actor>(self));
}

} // namespace

void on_resume(connection_self self) {
  auto& st = self->state;
  *st.waiting_for_room = false;
  st.args.readers_waiting->resumed();
  // Nothing started (its queries were closed, or its own bound holds them): the room it was
  // woken for goes to the next waiter.
  if (start_waiting_queries(self) == 0 && !*st.waiting_for_room)
    st.args.readers_waiting->wake_next();
}

// REQs closed while they waited are skipped; while the pod's readers hold their bound, the
// next query waits for room there.
std::size_t start_waiting_queries(connection_self self) {
  auto& st = self->state;
  std::size_t started = 0;
  while (!st.waiting_queries.empty() && st.logic->query_may_start()) {
    auto* req = std::get_if<live_request>(&st.waiting_queries.front());
    if (req && !st.logic->is_open(req->subscription_id, req->generation)) {
      st.waiting_queries.pop_front();
      continue;
    }
    if (st.args.readers_waiting && st.args.readers_waiting->full()) {
      wait_for_room(self);
      break;
    }
    auto next = std::move(st.waiting_queries.front());
    st.waiting_queries.pop_front();
    st.logic->query_started();
    ++started;
    if (auto* live = std::get_if<live_request>(&next)) {
      live->hidden = st.logic->history_hiding_for(live->subscription_id, live->generation);
      if (!st.args.readers.empty()) // counted queued now, not when the fan-out gets to it
        live->reader = reader_for(self);
      self->send(st.args.fanout, subscribe_atom_v, std::move(*live));
    } else {
      --st.waiting_counts;
      start_count(self, std::move(std::get<history_request>(next)));
    }
  }
  return started;
}

} // namespace comb::actors
