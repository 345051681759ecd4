// SPDX-License-Identifier: MIT
#include "actors/connection/replies_awaiting_state.hpp"

namespace comb::actors {

std::int64_t read_at(const query_reply& reply) {
  return std::visit([](const auto& r) { return r.result.state_version; }, reply);
}

void replies_awaiting_state::wait(query_reply reply, double now) {
  waiting_.push_back(entry{std::move(reply), now});
}

std::vector<replies_awaiting_state::released> replies_awaiting_state::release(std::int64_t held,
                                                                              double now,
                                                                              const taken_check& taken) {
  std::vector<released> out;
  if (waiting_.empty())
    return out;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (taken(it->reply)) {
      ++it;
      continue;
    }
    out.push_back(released{std::move(it->reply), false});
    it = waiting_.erase(it);
  }
  while (!waiting_.empty()) {
    auto& front = waiting_.front();
    const bool caught_up = read_at(front.reply) <= held;
    const bool late = !caught_up && now - front.since >= patience_;
    if (!caught_up && !late)
      break;
    out.push_back(released{std::move(front.reply), late});
    waiting_.pop_front();
  }
  return out;
}

} // namespace comb::actors
