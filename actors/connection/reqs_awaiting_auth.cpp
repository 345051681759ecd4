// SPDX-License-Identifier: MIT
#include "actors/connection/reqs_awaiting_auth.hpp"

#include <algorithm>
#include <utility>

namespace comb::actors {

bool reqs_awaiting_auth::hold(protocol::req_message message, const connection_policy& policy,
                              std::size_t open, const filter_holding& open_cost) {
  forget(message.subscription_id);
  const filter_holding mine = cost_of(message.filters);
  filter_holding total = cost_;
  total += open_cost;
  total += mine;
  if (over_subscription_cap(waiting_.size() + open, policy) || over_budget(total, policy, "waiting for AUTH"))
    return false;
  cost_ += mine;
  waiting_.push_back(std::move(message));
  return true;
}

void reqs_awaiting_auth::forget(const std::string& id) {
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [&](const protocol::req_message& m) { return m.subscription_id == id; });
  if (it == waiting_.end())
    return;
  cost_ -= cost_of(it->filters);
  waiting_.erase(it);
}

waiting_requests reqs_awaiting_auth::held_apart_from(const std::string& id) const {
  waiting_requests held{waiting_.size(), cost_};
  for (const auto& message : waiting_)
    if (message.subscription_id == id) {
      --held.count;
      held.cost -= cost_of(message.filters);
    }
  return held;
}

std::vector<protocol::req_message> reqs_awaiting_auth::take() {
  cost_ = {};
  return std::exchange(waiting_, {});
}

} // namespace comb::actors
