// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "storage/membership.hpp"

namespace comb::actors {

/// A membership command waiting for its turn, and who to tell the outcome.
struct queued_command {
  caf::actor reply_to;
  std::uint64_t ticket = 0;
  storage::membership_command command;
};

/// Membership commands one community holds waiting for its writer; past it they are answered
/// `busy` at once (rate-limited:, NIP-86 503). Each connection waits for a bounded number, but
/// many connections (a flood of joins from many addresses) could grow a queue without end.
inline constexpr std::size_t max_queued_commands = 4096;

/// Joins and leaves may fill only this much of the queue: the rest is kept for owners, admins
/// and the operator, so that keys made by the thousand, joining and leaving an open community
/// from many addresses, cannot keep an admin's ban or add from being queued.
inline constexpr std::size_t max_queued_self_requests = max_queued_commands / 4 * 3;

/// A request a user makes for themselves (a join, or a leave): anyone may send one, so they
/// share the smaller lane of the queue.
[[nodiscard]] bool is_self_request(const storage::membership_command& command) noexcept;

/// A command by an admin, an owner or the operator that may take someone's access away (a
/// removal, a ban, a role change, a transfer): it does not wait behind a list far ahead of the
/// clock. The writer decides from the plan whether it does (`takes_access`); this only says it
/// might. A user's own leave is not one: anyone may send those, and they wait as joins do.
[[nodiscard]] bool may_take_access(const storage::membership_command& command) noexcept;

/// The commands waiting, in arrival order, bounded per lane.
class membership_queue {
public:
  /// Queues the command at the back, or leaves it (false) when its lane is full.
  [[nodiscard]] bool push(queued_command waiting);
  /// The first `max` commands, in order, taken off the queue.
  [[nodiscard]] std::vector<queued_command> take(std::size_t max);
  /// A batch taken and not applied goes back to the front, in its order, whatever the bounds.
  void put_back(std::vector<queued_command> batch);

  /// How many commands from the front reach the last one that may take access (0: none).
  [[nodiscard]] std::size_t reach_of_access_changes() const noexcept;

  [[nodiscard]] bool empty() const noexcept { return waiting_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return waiting_.size(); }

private:
  std::deque<queued_command> waiting_;
  std::size_t self_requests_ = 0;
};

} // namespace comb::actors
