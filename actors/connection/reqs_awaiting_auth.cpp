// SPDX-License-Identifier: MIT
#include "actors/connection/reqs_awaiting_auth.hpp"

#include <algorithm>

namespace comb::actors {

namespace {

void subtract(filter_cost& from, const filter_cost& cost) {
  from.filters -= std::min(from.filters, cost.filters);
  from.values -= std::min(from.values, cost.values);
  from.broad -= std::min(from.broad, cost.broad);
}

} // namespace

bool reqs_awaiting_auth::hold(protocol::req_message message, const connection_policy& policy) {
  forget(message.subscription_id);
  filter_cost wanted = cost_of(message.filters);
  if (waiting_.size() >= policy.limits.max_subscriptions_per_connection
      || cost_.filters + wanted.filters > policy.max_filters
      || cost_.values + wanted.values > policy.max_filter_values
      || cost_.broad + wanted.broad > policy.max_broad_filters)
    return false;
  cost_.filters += wanted.filters;
  cost_.values += wanted.values;
  cost_.broad += wanted.broad;
  waiting_.push_back(std::move(message));
  return true;
}

void reqs_awaiting_auth::forget(const std::string& id) {
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [&](const protocol::req_message& m) { return m.subscription_id == id; });
  if (it == waiting_.end())
    return;
  subtract(cost_, cost_of(it->filters));
  waiting_.erase(it);
}

std::vector<protocol::req_message> reqs_awaiting_auth::take() {
  cost_ = {};
  return std::exchange(waiting_, {});
}

} // namespace comb::actors
