// SPDX-License-Identifier: MIT
#include "actors/connection/query_replies.hpp"

#include <limits>

#include "actors/clock.hpp"
#include "actors/connection/count_requests.hpp"
#include "actors/connection/subscription_requests.hpp"

namespace comb::actors {
namespace {

/// How often a connection whose replies wait looks whether its pod caught up: the access
/// watcher loads a change within milliseconds of its notification.
constexpr std::chrono::milliseconds state_check_interval{20};

const protocol::rejection not_caught_up{
  protocol::reason::error,
  "this relay has not yet caught up with a change of who may read this community; try again"};

/// The state version this pod holds of the connection's community (every one when it keeps no
/// state of it).
std::int64_t state_held(connection_self self) {
  const auto& members = self->state.args.policy.members;
  return members ? members->whole_version() : std::numeric_limits<std::int64_t>::max();
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
  if (!std::exchange(self->state.state_check_scheduled, true))
    self->delayed_send(self, state_check_interval, state_check_atom_v);
}

} // namespace

void on_query_reply(connection_self self, query_reply reply) {
  auto& st = self->state;
  if (!st.awaiting_state.must_wait(read_at(reply), state_held(self)))
    return answer(self, reply, false);
  bump(st.args.metrics->replies_awaited);
  st.awaiting_state.wait(std::move(reply), monotonic_seconds());
  schedule_state_check(self);
}

void on_state_check(connection_self self) {
  auto& st = self->state;
  st.state_check_scheduled = false;
  for (auto& released : st.awaiting_state.release(state_held(self), monotonic_seconds()))
    answer(self, released.reply, released.late);
  if (!st.awaiting_state.empty())
    schedule_state_check(self);
}

} // namespace comb::actors
