// SPDX-License-Identifier: MIT
#include "actors/fanout/subscription_index.hpp"

#include <algorithm>

namespace comb::actors {
namespace {

std::string tag_key(char name, const std::string& value) {
  std::string key(1, name);
  key += value;
  return key;
}

} // namespace

void subscription_index::add(owner_id owner, const std::string& subscription_id,
                             std::vector<protocol::filter> filters, std::uint64_t generation) {
  remove(owner, subscription_id);
  auto [it, inserted] = entries_.try_emplace({owner, subscription_id});
  entry& e = it->second;
  e.owner = owner;
  e.subscription_id = subscription_id;
  e.generation = generation;
  e.filters = std::move(filters);
  file(e);
  subscriptions_of_[owner].push_back(subscription_id);
}

void subscription_index::remove(owner_id owner, const std::string& subscription_id) {
  auto it = entries_.find({owner, subscription_id});
  if (it == entries_.end())
    return;
  unfile(it->second);
  entries_.erase(it);
  auto& names = subscriptions_of_[owner];
  names.erase(std::remove(names.begin(), names.end(), subscription_id), names.end());
  if (names.empty())
    subscriptions_of_.erase(owner);
}

void subscription_index::remove_owner(owner_id owner) {
  auto it = subscriptions_of_.find(owner);
  if (it == subscriptions_of_.end())
    return;
  auto names = it->second;
  for (const auto& name : names)
    remove(owner, name);
}

bool subscription_index::is_broad(const protocol::filter& f) noexcept {
  return !f.ids && !f.authors && f.tags.empty() && !f.kinds;
}

template <class Visit>
void subscription_index::for_each_bucket(const protocol::filter& f, Visit&& visit) {
  if (protocol::matches_nothing(f))
    return;
  if (f.ids)
    for (const auto& id : *f.ids)
      visit(by_id_, id);
  else if (f.authors)
    for (const auto& author : *f.authors)
      visit(by_author_, author);
  else if (!f.tags.empty())
    for (const auto& value : f.tags.front().values)
      visit(by_tag_, tag_key(f.tags.front().name, value));
  else if (f.kinds)
    for (auto kind : *f.kinds)
      visit(by_kind_, kind);
}

void subscription_index::file(entry& e) {
  for (std::size_t i = 0; i < e.filters.size(); ++i) {
    filter_ref ref{&e, i};
    const auto& f = e.filters[i];
    if (protocol::matches_nothing(f))
      continue;
    if (is_broad(f)) {
      match_all_.push_back(ref);
      continue;
    }
    for_each_bucket(f, [&](auto& map, const auto& key) { map[key].push_back(ref); });
  }
}

void subscription_index::unfile(const entry& e) {
  auto mine = [&](const filter_ref& r) { return r.owner_entry == &e; };
  std::erase_if(match_all_, mine);
  // Emptied buckets are erased: keys come from clients, so a kept empty bucket is a leak.
  for (const auto& f : e.filters) {
    if (is_broad(f) || protocol::matches_nothing(f))
      continue;
    for_each_bucket(f, [&](auto& map, const auto& key) {
      auto it = map.find(key);
      if (it == map.end())
        return;
      std::erase_if(it->second, mine);
      if (it->second.empty())
        map.erase(it);
    });
  }
}

void subscription_index::collect(const bucket* b, std::vector<filter_ref>& out) const {
  if (b)
    out.insert(out.end(), b->begin(), b->end());
}

void subscription_index::match_into(const protocol::event& ev, std::vector<match_ref>& out) const {
  auto find = [](const auto& map, const auto& key) -> const bucket* {
    auto it = map.find(key);
    return it == map.end() ? nullptr : &it->second;
  };
  out.clear();
  candidates_.clear();
  matched_.clear();
  collect(find(by_id_, ev.id), candidates_);
  collect(find(by_author_, ev.pubkey), candidates_);
  collect(find(by_kind_, ev.kind), candidates_);
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0].size() == 1)
      collect(find(by_tag_, tag_key(t[0][0], t[1])), candidates_);
  collect(&match_all_, candidates_);

  for (const auto& ref : candidates_)
    if (protocol::matches(ref.owner_entry->filters[ref.filter], ev))
      matched_.push_back(ref.owner_entry);
  std::sort(matched_.begin(), matched_.end(), [](const entry* a, const entry* b) {
    // By id within an owner, not by address, so deliveries come in the same order every run.
    return a->owner != b->owner ? a->owner < b->owner : a->subscription_id < b->subscription_id;
  });
  matched_.erase(std::unique(matched_.begin(), matched_.end()), matched_.end());
  out.reserve(matched_.size());
  for (const entry* e : matched_)
    out.push_back({e->owner, &e->subscription_id, e->generation});
}

std::vector<std::pair<subscription_index::owner_id, std::vector<matched_subscription>>>
subscription_index::match(const protocol::event& ev) const {
  std::vector<match_ref> refs;
  match_into(ev, refs);
  std::vector<std::pair<owner_id, std::vector<matched_subscription>>> out;
  for (const auto& ref : refs) {
    if (out.empty() || out.back().first != ref.owner)
      out.emplace_back(ref.owner, std::vector<matched_subscription>{});
    out.back().second.push_back({*ref.subscription_id, ref.generation});
  }
  return out;
}

} // namespace comb::actors
