// SPDX-License-Identifier: MIT
#include "actors/fanout/fanout_actor.hpp"

#include "actors/messages.hpp"

namespace comb::actors {
namespace {

constexpr std::size_t recent_ids_kept = 100'000;

constexpr std::uint32_t member_list_kind = 13534;

/// True the first time an event is seen in a community (within the last `recent_ids_kept`).
bool first_sighting(fanout_state& st, const delivered_key& key) {
  if (!st.recent.insert(key).second)
    return false;
  st.recent_order.push_back(key);
  if (st.recent_order.size() > recent_ids_kept) {
    st.recent.erase(st.recent_order.front());
    st.recent_order.pop_front();
  }
  return true;
}

/// Lists only move forward: a 13534 older than one already delivered in its community is
/// dropped (only the relay can publish 13534, so the kind is enough).
bool list_moves_forward(fanout_state& st, std::int64_t community, const protocol::event& ev) {
  if (ev.kind != member_list_kind)
    return true;
  auto& newest = st.newest_list_at[community];
  if (ev.created_at < newest)
    return false;
  newest = ev.created_at;
  return true;
}

} // namespace

caf::behavior fanout_actor(caf::stateful_actor<fanout_state>* self, fanout_args args) {
  self->state.args = std::move(args);
  return {
    [=](subscribe_atom, live_request& request) {
      auto& st = self->state;
      st.communities[request.community_id].add(request.owner, request.subscription_id,
                                                request.filters, request.generation);
      st.connections[request.owner] = request.connection;
      st.subscribers[request.community_id].insert(request.owner);
      const auto& readers = st.args.readers;
      if (readers.empty())
        return;
      history_request history{request.connection, request.community_id, request.subscription_id,
                              request.generation, std::move(request.filters), std::move(request.flow),
                              {}};
      self->send(pick_reader(readers, st.args.readers_waiting.get(), request.owner), query_atom_v,
                 std::move(history));
    },
    [=](unsubscribe_atom, std::uint64_t owner, std::int64_t community, const std::string& sub) {
      auto it = self->state.communities.find(community);
      if (it != self->state.communities.end())
        it->second.remove(owner, sub);
    },
    [=](forget_atom, std::uint64_t owner, std::int64_t community) {
      auto it = self->state.communities.find(community);
      if (it != self->state.communities.end())
        it->second.remove_owner(owner);
      self->state.connections.erase(owner);
      self->state.subscribers[community].erase(owner);
    },
    [=](revoke_atom, std::int64_t community, const pubkey_list& pubkeys) {
      auto& st = self->state;
      for (auto owner : st.subscribers[community])
        if (auto it = st.connections.find(owner); it != st.connections.end())
          self->send(it->second, revoke_atom_v, community, pubkeys);
    },
    [=](publish_atom, const committed_event& committed) {
      auto& st = self->state;
      if (!first_sighting(st, {committed.community_id, committed.event.ev->id})
          || !list_moves_forward(st, committed.community_id, *committed.event.ev))
        return;
      auto it = st.communities.find(committed.community_id);
      if (it == st.communities.end())
        return;
      for (auto& [owner, subs] : it->second.match(*committed.event.ev)) {
        auto target = st.connections.find(owner);
        if (target == st.connections.end())
          continue;
        bump(st.args.metrics->deliveries, static_cast<std::uint64_t>(subs.size()));
        self->send(target->second, deliver_atom_v, committed.event, std::move(subs));
      }
    },
  };
}

} // namespace comb::actors
