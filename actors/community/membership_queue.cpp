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

bool may_take_access(const storage::membership_command& command) noexcept {
  if (is_self_request(command))
    return false; // a leave waits as joins do: anyone may send one
  switch (command.change) {
    case membership_change::remove_member:
    case membership_change::remove_member_if_role:
    case membership_change::update_role:
    case membership_change::provision_owner:
    case membership_change::transfer_owner:
    case membership_change::ban_pubkey: return true;
    default: return false;
  }
}

std::size_t membership_queue::reach_of_access_changes() const noexcept {
  for (std::size_t i = waiting_.size(); i > 0; --i)
    if (may_take_access(waiting_[i - 1].command))
      return i;
  return 0;
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
