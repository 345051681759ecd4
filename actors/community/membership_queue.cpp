// SPDX-License-Identifier: MIT
#include "actors/community/membership_queue.hpp"

namespace comb::actors {

using storage::membership_change;

bool is_self_request(const storage::membership_command& command) noexcept {
  bool own = command.requested_by && *command.requested_by == command.subject;
  return own
         && (command.change == membership_change::claim_membership
             || command.change == membership_change::claim_invite
             || command.change == membership_change::remove_member);
}

bool membership_queue::push(queued_command waiting) {
  bool self_request = is_self_request(waiting.command);
  if (waiting_.size() >= max_queued_commands
      || (self_request && self_requests_ >= max_queued_self_requests))
    return false;
  self_requests_ += self_request ? 1 : 0;
  waiting_.push_back(std::move(waiting));
  return true;
}

std::vector<queued_command> membership_queue::take(std::size_t max) {
  std::vector<queued_command> batch;
  while (!waiting_.empty() && batch.size() < max) {
    self_requests_ -= is_self_request(waiting_.front().command) ? 1 : 0;
    batch.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  return batch;
}

void membership_queue::put_back(std::vector<queued_command> batch) {
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
    self_requests_ += is_self_request(it->command) ? 1 : 0;
    waiting_.push_front(std::move(*it));
  }
}

} // namespace comb::actors
