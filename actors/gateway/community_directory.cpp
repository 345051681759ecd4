// SPDX-License-Identifier: MIT
#include "actors/gateway/community_directory.hpp"

#include "actors/messages.hpp"
#include "storage/community_state.hpp"
#include "storage/management_store.hpp"
#include "storage/membership_store.hpp"

namespace comb::actors {

std::optional<host_lookup> community_directory::cached(const std::string& host) const {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (auto unknown = unknown_.find(host);
      unknown != unknown_.end() && now - unknown->second <= unknown_ttl)
    return host_lookup{true, std::nullopt};
  auto it = entries_.find(host);
  if (it == entries_.end() || now - it->second.at > ttl_)
    return std::nullopt;
  return it->second.answer;
}

std::optional<host_lookup> community_directory::last_known(const std::string& host) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(host);
  if (it == entries_.end())
    return std::nullopt;
  return it->second.answer;
}

std::uint64_t community_directory::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

void community_directory::remember(const std::string& host, const host_lookup& answer,
                                   std::uint64_t asked_in) {
  if (!answer.answered)
    return;
  std::lock_guard lock(mutex_);
  if (asked_in < all_forgotten_at_)
    return;
  if (answer.community) {
    auto forgotten = community_forgotten_at_.find(answer.community->id);
    if (forgotten != community_forgotten_at_.end() && asked_in < forgotten->second)
      return;
  }
  auto now = std::chrono::steady_clock::now();
  if (!answer.community) {
    // Past the bound the oldest second's misses go: they are stale by then, or a flood's.
    if (unknown_.size() >= max_unknown_entries)
      std::erase_if(unknown_, [&](const auto& item) { return now - item.second > unknown_ttl; });
    if (unknown_.size() >= max_unknown_entries)
      unknown_.clear();
    unknown_[host] = now;
    return;
  }
  unknown_.erase(host);
  if (entries_.size() >= max_entries && !entries_.contains(host))
    std::erase_if(entries_, [&](const auto& item) { return now - item.second.at > ttl_; });
  if (entries_.size() >= max_entries && !entries_.contains(host))
    entries_.clear();
  entries_[host] = {answer, now};
}

std::size_t community_directory::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size() + unknown_.size();
}

void community_directory::forget_all() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  unknown_.clear();
  all_forgotten_at_ = ++generation_;
  community_forgotten_at_.clear();
}

void community_directory::forget_community(std::int64_t community_id) {
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [&](const auto& item) {
    return item.second.answer.community && item.second.answer.community->id == community_id;
  });
  community_forgotten_at_[community_id] = ++generation_;
}

namespace {

/// How often live communities are checked for archiving or deletion (also how long a removed
/// host keeps answering on this pod at most).
constexpr auto lifecycle_check_interval = std::chrono::seconds(5);

void end_inactive_communities(caf::stateful_actor<directory_state>* self) {
  auto& st = self->state;
  if (!st.args.registry || !st.args.close_community)
    return;
  // A deleted community leaves the registry (its id is never used again): forget it here too.
  std::erase_if(st.closed, [&](std::int64_t id) { return !st.args.registry->find(id); });
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
      auto asked_in = s.args.cache->generation();
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
      s.args.cache->remember(host, answer, asked_in);
      reply(std::move(answer));
    },
  };
}

} // namespace comb::actors
