// SPDX-License-Identifier: MIT
#include "actors/community/community_actor.hpp"

#include "storage/member_list.hpp"

namespace comb::actors {
namespace {

using self_ptr = caf::stateful_actor<community_state>*;

void dispatch(self_ptr self) {
  auto& st = self->state;
  if (!st.in_flight.empty() || st.queue.empty())
    return;
  std::vector<storage::membership_command> commands;
  while (!st.queue.empty() && st.in_flight.size() < st.args.batch_max) {
    commands.push_back(st.queue.front().command);
    st.in_flight.push_back(std::move(st.queue.front()));
    st.queue.pop_front();
  }
  st.batch_started = std::chrono::steady_clock::now();
  self->send(st.args.membership_writer, apply_atom_v, st.args.community_id, std::move(commands));
}

void count(self_ptr self, const storage::membership_write& write) {
  auto& st = self->state;
  if (!st.args.metrics)
    return;
  auto& m = *st.args.metrics;
  m.membership_latency.observe(
    std::chrono::duration<double>(std::chrono::steady_clock::now() - st.batch_started).count());
  for (std::size_t i = 0; i < st.in_flight.size() && i < write.results.size(); ++i) {
    auto path = static_cast<std::size_t>(st.in_flight[i].command.change);
    auto outcome = static_cast<std::size_t>(write.results[i].outcome);
    if (path < membership_paths && outcome < membership_outcomes)
      bump(m.membership_writes[path][outcome]);
  }
  if (write.list)
    bump(m.list_writes);
}

void publish(self_ptr self, const protocol::event& ev, std::string json) {
  auto& st = self->state;
  committed_event committed{st.args.community_id,
                            {std::make_shared<const protocol::event>(ev),
                             std::make_shared<const std::string>(std::move(json))}};
  self->send(st.args.fanout, publish_atom_v, committed);
  if (st.args.bridge)
    self->send(st.args.bridge, publish_atom_v, committed);
}

void revoke(self_ptr self, std::vector<protocol::bytes32> lost) {
  if (!lost.empty())
    self->send(self->state.args.fanout, revoke_atom_v, self->state.args.community_id,
               pubkey_list(std::move(lost)));
}

/// Another pod's list: the cache follows it when it is newer than anything applied yet.
void remote_list(self_ptr self, const live_event& list) {
  auto& st = self->state;
  if (list.ev->created_at <= st.newest_list_at)
    return;
  auto members = storage::members_of_list(*list.ev);
  if (!members)
    return;
  st.newest_list_at = list.ev->created_at;
  revoke(self, st.args.cache->replace(*members));
}

/// Bans and unbans of this write, now committed, reach the connections' checks.
void follow_bans(self_ptr self, const storage::membership_write& write) {
  auto& st = self->state;
  if (!st.args.bans)
    return;
  for (std::size_t i = 0; i < st.in_flight.size() && i < write.results.size(); ++i) {
    auto change = st.in_flight[i].command.change;
    auto outcome = write.results[i].outcome;
    bool took_effect = outcome == storage::membership_outcome::changed
                       || outcome == storage::membership_outcome::nothing_to_do;
    if (took_effect && change == storage::membership_change::ban_pubkey)
      st.args.bans->set_pubkey(st.in_flight[i].command.subject, true);
    if (took_effect && change == storage::membership_change::unban_pubkey)
      st.args.bans->set_pubkey(st.in_flight[i].command.subject, false);
  }
}

void committed(self_ptr self, const storage::membership_write& write) {
  auto& st = self->state;
  follow_bans(self, write);
  if (write.list)
    st.newest_list_at = std::max(st.newest_list_at, write.list->created_at);
  auto lost = st.args.cache->replace(write.members);
  if (write.list)
    publish(self, *write.list, write.list_json);
  for (const auto& result : write.results)
    if (result.delta)
      publish(self, *result.delta, result.delta_json);
  revoke(self, std::move(lost));
}

} // namespace

caf::behavior community_actor(caf::stateful_actor<community_state>* self, community_args args) {
  self->state.args = std::move(args);
  return {
    [=](member_atom, std::uint64_t ticket, const storage::membership_command& command) {
      auto sender = caf::actor_cast<caf::actor>(self->current_sender());
      self->state.queue.push_back({std::move(sender), ticket, command});
      dispatch(self);
    },
    [=](remote_list_atom, const live_event& list) { remote_list(self, list); },
    [=](event_ban_atom, const protocol::bytes32& id, ban_state state) {
      if (self->state.args.bans)
        self->state.args.bans->set_event(id, state == ban_state::banned);
    },
    [=](applied_atom, const storage::membership_write& write) {
      auto& st = self->state;
      count(self, write);
      if (write.committed)
        committed(self, write);
      for (std::size_t i = 0; i < st.in_flight.size(); ++i) {
        auto result = i < write.results.size()
                        ? write.results[i]
                        : storage::membership_result::of(storage::membership_outcome::failed);
        if (st.in_flight[i].reply_to)
          self->send(st.in_flight[i].reply_to, member_done_atom_v, st.in_flight[i].ticket, result);
      }
      st.in_flight.clear();
      dispatch(self);
    },
  };
}

} // namespace comb::actors
