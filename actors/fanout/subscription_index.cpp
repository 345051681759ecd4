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
  e.places.clear();
  e.taken_in_turn.assign(e.filters.size(), 0);
  for (std::uint32_t i = 0; i < e.filters.size(); ++i) {
    const auto& f = e.filters[i];
    if (protocol::matches_nothing(f))
      continue;
    if (is_broad(f))
      file_in(match_all_, e, i);
    else
      for_each_bucket(f, [&](auto& map, const auto& key) { file_in(map[key], e, i); });
  }
}

void subscription_index::file_in(bucket& b, entry& e, std::uint32_t filter) {
  e.places.push_back({&b, b.size()});
  b.push_back({&e, filter, static_cast<std::uint32_t>(e.places.size() - 1)});
}

void subscription_index::unfile(entry& e) {
  // Each ref leaves its bucket by taking the bucket's last one into its slot: a bucket may hold
  // every connection's filters for one value, and a walk of it per removal would let clients
  // that open and close subscriptions keep the fan-out busy.
  for (const auto& p : e.places) {
    bucket& b = *p.in;
    const filter_ref last = b.back();
    b[p.at] = last;
    last.owner_entry->places[last.place].at = p.at;
    b.pop_back();
  }
  e.places.clear();
  // Emptied buckets are erased: keys come from clients, so a kept empty bucket is a leak.
  for (const auto& f : e.filters) {
    if (is_broad(f) || protocol::matches_nothing(f))
      continue;
    for_each_bucket(f, [&](auto& map, const auto& key) {
      auto it = map.find(key);
      if (it != map.end() && it->second.empty())
        map.erase(it);
    });
  }
}

void subscription_index::collect(const bucket* b) const {
  if (b)
    candidates_.insert(candidates_.end(), b->begin(), b->end());
}

void subscription_index::collect_once(const bucket* b) const {
  if (!b)
    return;
  for (const auto& ref : *b) {
    auto& taken = ref.owner_entry->taken_in_turn[ref.filter];
    if (taken != turn_) {
      taken = turn_;
      candidates_.push_back(ref);
    }
  }
}

std::size_t subscription_index::match_into(const protocol::event& ev,
                                           std::vector<match_ref>& out) const {
  auto find = [](const auto& map, const auto& key) -> const bucket* {
    auto it = map.find(key);
    return it == map.end() ? nullptr : &it->second;
  };
  out.clear();
  candidates_.clear();
  matched_.clear();
  // A filter sits in one map, under each of its values: an event has one id, author and kind,
  // so only its tags (several values of one filter) can lead to a filter twice.
  collect(find(by_id_, ev.id));
  collect(find(by_author_, ev.pubkey));
  collect(find(by_kind_, ev.kind));
  collect(&match_all_);
  // Each distinct tag once: an event that repeats a tag would walk its bucket again per copy.
  ++turn_;
  event_tags_.assign(ev);
  for (const auto& [name, value] : event_tags_.pairs()) {
    tag_key_.assign(1, name);
    tag_key_ += value;
    collect_once(find(by_tag_, tag_key_));
  }

  for (const auto& ref : candidates_)
    if (protocol::matches(ref.owner_entry->filters[ref.filter], ev, event_tags_))
      matched_.push_back(ref.owner_entry);
  std::sort(matched_.begin(), matched_.end(), [](const entry* a, const entry* b) {
    // By id within an owner, not by address, so deliveries come in the same order every run.
    return a->owner != b->owner ? a->owner < b->owner : a->subscription_id < b->subscription_id;
  });
  matched_.erase(std::unique(matched_.begin(), matched_.end()), matched_.end());
  out.reserve(matched_.size());
  for (const entry* e : matched_)
    out.push_back({e->owner, &e->subscription_id, e->generation});
  return candidates_.size();
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
