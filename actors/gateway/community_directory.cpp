// SPDX-License-Identifier: MIT
#include "actors/gateway/community_directory.hpp"

#include "actors/messages.hpp"
#include "storage/community_state.hpp"
#include "storage/management_store.hpp"
#include "storage/membership_store.hpp"

namespace comb::actors {

std::optional<host_lookup> community_directory::cached(const std::string& host) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(host);
  if (it == entries_.end() || std::chrono::steady_clock::now() - it->second.at > ttl_)
    return std::nullopt;
  return it->second.answer;
}

void community_directory::remember(const std::string& host, const host_lookup& answer) {
  // Misses are not kept: any client can send any Host header, and each would stay here. Hits
  // name a row of the communities table, so they are as many as the hosts an operator made.
  if (!answer.answered || !answer.community)
    return;
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (entries_.size() >= max_entries && !entries_.contains(host))
    std::erase_if(entries_, [&](const auto& item) { return now - item.second.at > ttl_; });
  if (entries_.size() >= max_entries && !entries_.contains(host))
    entries_.clear();
  entries_[host] = {answer, now};
}

std::size_t community_directory::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void community_directory::forget_all() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

namespace {

/// How often live communities are checked for archiving or deletion (also how long a removed
/// host keeps answering on this pod at most).
constexpr auto lifecycle_check_interval = std::chrono::seconds(5);

void end_inactive_communities(caf::stateful_actor<directory_state>* self) {
  auto& st = self->state;
  if (!st.args.registry || !st.args.close_community)
    return;
  std::vector<std::int64_t> known;
  for (auto id : st.args.registry->community_ids())
    if (!st.closed.contains(id))
      known.push_back(id);
  auto inactive = storage::inactive_communities(*st.connection, known);
  if (!inactive)
    return;
  for (auto id : *inactive)
    if ((*st.args.close_community)(id))
      st.closed.insert(id);
}

} // namespace

caf::behavior directory_actor(caf::stateful_actor<directory_state>* self, directory_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.connection = std::make_unique<storage::pg_connection>(st.args.database_url);
  st.store = std::make_unique<storage::community_store>(*st.connection);
  self->delayed_send(self, lifecycle_check_interval, tick_atom_v);
  return {
    [=](tick_atom) {
      end_inactive_communities(self);
      self->delayed_send(self, lifecycle_check_interval, tick_atom_v);
    },
    [=](lookup_atom, const std::string& host, const lookup_callback& reply) {
      auto& s = self->state;
      if (auto hit = s.args.cache->cached(host)) {
        reply(*hit);
        return;
      }
      host_lookup answer;
      answer.community = s.store->find_by_host(host);
      answer.answered = answer.community.has_value() || s.store->last_error().empty();
      if (answer.community && !answer.community->archived)
        s.closed.erase(answer.community->id); // unarchived: watch it again
      if (answer.community && s.args.registry) {
        auto id = answer.community->id;
        auto ready = s.args.registry->ensure(
          id, [&] { return storage::load_access(*s.connection, id); });
        answer.answered = ready.has_value();
      }
      s.args.cache->remember(host, answer);
      reply(std::move(answer));
    },
  };
}

} // namespace comb::actors
