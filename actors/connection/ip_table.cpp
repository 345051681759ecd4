// SPDX-License-Identifier: MIT
#include "actors/connection/ip_table.hpp"

#include <algorithm>

namespace comb::actors {

ip_table::slot::~slot() {
  table_->release(ip_);
}

ip_table::entry* ip_table::find_or_add(const std::string& ip, double now) {
  if (auto it = entries_.find(ip); it != entries_.end())
    return &it->second;
  // Sweep when the table has doubled since the last sweep, or when it is full (then at most
  // once a second, so a table full of live addresses does not cost a scan per new socket).
  bool full = entries_.size() >= limits_.max_tracked;
  if (entries_.size() >= sweep_at_ || (full && now - last_sweep_ >= 1.0))
    sweep(now);
  if (entries_.size() >= limits_.max_tracked)
    return nullptr;
  auto& added = entries_[ip];
  added.budget = std::make_shared<ip_budget>(limits_);
  return &added;
}

void ip_table::sweep(double now) {
  std::erase_if(entries_, [now](auto& item) {
    return item.second.connections == 0 && item.second.budget->idle(now);
  });
  // The next sweep waits until the table has doubled, so sweeping costs O(1) per insertion.
  sweep_at_ = std::max<std::size_t>(1024, entries_.size() * 2);
  last_sweep_ = now;
}

std::unique_ptr<ip_table::slot> ip_table::open(const std::string& ip, double now, refusal& why) {
  std::shared_ptr<ip_budget> budget;
  {
    std::lock_guard lock(mutex_);
    entry* e = find_or_add(ip, now);
    if (!e) {
      why = refusal::too_many_addresses;
      return nullptr;
    }
    if (e->connections >= limits_.max_connections) {
      why = refusal::too_many_connections;
      return nullptr;
    }
    ++e->connections;
    budget = e->budget;
  }
  why = refusal::none;
  return std::make_unique<slot>(shared_from_this(), ip, std::move(budget));
}

std::shared_ptr<ip_budget> ip_table::budget(const std::string& ip, double now) {
  std::lock_guard lock(mutex_);
  entry* e = find_or_add(ip, now);
  return e ? e->budget : nullptr;
}

void ip_table::release(const std::string& ip) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(ip); it != entries_.end() && it->second.connections > 0)
    --it->second.connections;
}

std::size_t ip_table::tracked() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::size_t ip_table::connections_of(const std::string& ip) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(ip);
  return it == entries_.end() ? 0 : it->second.connections;
}

} // namespace comb::actors
