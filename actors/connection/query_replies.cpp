// SPDX-License-Identifier: MIT
#include "actors/connection/query_replies.hpp"

#include <algorithm>
#include <limits>

#include "actors/clock.hpp"
#include "actors/connection/count_requests.hpp"
#include "actors/connection/subscription_requests.hpp"

namespace comb::actors {
namespace {

/// How soon a connection whose replies wait looks whether its pod caught up (the access
/// watcher loads a change within milliseconds of its notification), and how far apart its looks
/// grow while the pod lags (a second when a notification was lost).
constexpr std::chrono::milliseconds first_state_check{20};
constexpr std::chrono::milliseconds max_state_check{320};

const protocol::rejection not_caught_up{
  protocol::reason::error,
  "this relay has not yet caught up with a change of who may read this community; try again"};

/// The state version this pod holds of the connection's community (every one when it keeps no
/// state of it).
std::int64_t state_held(connection_self self) {
  const auto& members = self->state.args.policy.members;
  return members ? members->whole_version() : std::numeric_limits<std::int64_t>::max();
}

/// Whether the connection still takes the reply: a chunk of a subscription closed or replaced
/// since, or a COUNT answered, only gives back its places (on_history, on_counted).
bool still_taken(connection_self self, const query_reply& reply) {
  if (const auto* chunk = std::get_if<history_chunk_reply>(&reply))
    return self->state.logic->is_open(chunk->sub, chunk->generation);
  return self->state.counts_in_flight.contains(std::get<count_reply>(reply).ticket);
}

void answer(connection_self self, query_reply& reply, bool late) {
  auto& st = self->state;
  if (late)
    bump(st.args.metrics->replies_awaited_too_long);
  if (auto* chunk = std::get_if<history_chunk_reply>(&reply)) {
    // Ended here; the chunk, and the rest of the reply as it comes, only give their places back.
    if (late && st.logic->is_open(chunk->sub, chunk->generation))
      refuse_subscription(self, chunk->sub, not_caught_up);
    return on_history(self, chunk->sub, chunk->generation, chunk->result);
  }
  auto& count = std::get<count_reply>(reply);
  if (late)
    count.result = storage::count_result{false, 0, not_caught_up.text()};
  on_counted(self, count.ticket, count.result);
}

void schedule_state_check(connection_self self) {
  auto& st = self->state;
  if (std::exchange(st.state_check_scheduled, true))
    return;
  auto after = std::chrono::milliseconds(st.state_check_delay_ms);
  st.state_check_delay_ms = std::min(st.state_check_delay_ms * 2, max_state_check.count());
  self->delayed_send(self, after, state_check_atom_v);
}

/// Answers, in order, what may go now: what nobody takes, what the pod has caught up with, and
/// what waited too long.
void release_ready(connection_self self) {
  auto taken = [self](const query_reply& reply) { return still_taken(self, reply); };
  for (auto& released : self->state.awaiting_state.release(state_held(self), monotonic_seconds(), taken))
    answer(self, released.reply, released.late);
}

} // namespace

void on_query_reply(connection_self self, query_reply reply) {
  auto& st = self->state;
  if (!st.awaiting_state.empty())
    release_ready(self); // so that one nobody takes any more holds up no newer reply
  if (!still_taken(self, reply) || !st.awaiting_state.must_wait(read_at(reply), state_held(self)))
    return answer(self, reply, false);
  if (st.awaiting_state.empty())
    st.state_check_delay_ms = first_state_check.count();
  bump(st.args.metrics->replies_awaited);
  st.awaiting_state.wait(std::move(reply), monotonic_seconds());
  schedule_state_check(self);
}

void on_state_check(connection_self self) {
  auto& st = self->state;
  st.state_check_scheduled = false;
  release_ready(self);
  if (!st.awaiting_state.empty())
    schedule_state_check(self);
}

} // namespace comb::actors
