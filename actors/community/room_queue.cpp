// SPDX-License-Identifier: MIT
#include "actors/community/room_queue.hpp"

#include <algorithm>
#include <iterator>
#include <set>

namespace comb::actors {

bool is_own_room_request(const protocol::room_request& request) noexcept {
  return (request.action == protocol::room_action::join
          || request.action == protocol::room_action::leave)
         && request.subject == request.author;
}

void room_queue::take_place(const queued_room& request) {
  bytes_ += queued_bytes(request.command);
  if (!is_own_room_request(request.command.request))
    return;
  ++own_requests_[request.command.request.author];
  ++self_requests_;
}

void room_queue::free_place(const queued_room& request) {
  bytes_ -= queued_bytes(request.command);
  if (!is_own_room_request(request.command.request))
    return;
  if (--own_requests_[request.command.request.author] == 0)
    own_requests_.erase(request.command.request.author);
  --self_requests_;
}

bool room_queue::push(queued_room waiting) {
  if (size() >= max_queued_commands || bytes_ + queued_bytes(waiting.command) > max_queued_room_bytes)
    return false;
  const auto& request = waiting.command.request;
  if (is_own_room_request(request)) {
    auto own = own_requests_.find(request.author);
    if (self_requests_ >= max_queued_self_requests
        || (own != own_requests_.end() && own->second >= max_queued_per_member))
      return false;
  }
  take_place(waiting);
  waiting_.push_back(std::move(waiting));
  return true;
}

std::vector<storage::room_command> room_queue::start_batch() {
  std::vector<storage::room_command> commands;
  if (!under_way_.empty())
    return commands;
  auto first = std::ranges::find_if(waiting_, [&](const queued_room& request) {
    return !rooms_on_clock_.contains(request.command.request.room);
  });
  if (first == waiting_.end())
    return commands;
  const std::string room = first->command.request.room;
  std::set<protocol::bytes32> subjects;
  for (auto it = first; it != waiting_.end() && under_way_.size() < max_room_batch;) {
    if (it->command.request.room != room) {
      ++it;
      continue;
    }
    if (!subjects.insert(it->command.request.subject).second)
      break;
    commands.push_back(it->command);
    under_way_.push_back(std::move(*it));
    it = waiting_.erase(it);
  }
  return commands;
}

std::vector<queued_room> room_queue::finish_batch() {
  auto batch = std::exchange(under_way_, {});
  for (const auto& request : batch)
    free_place(request);
  return batch;
}

std::string room_queue::retry_batch(std::int64_t retry_at) {
  if (under_way_.empty())
    return {};
  std::string room = under_way_.front().command.request.room;
  rooms_on_clock_[room] = retry_at;
  // Before every request of its room still waiting; the other rooms' order does not matter.
  waiting_.insert(waiting_.begin(), std::make_move_iterator(under_way_.begin()),
                  std::make_move_iterator(under_way_.end()));
  under_way_.clear();
  return room;
}

void room_queue::release(const std::string& room, std::int64_t retry_at) {
  auto it = rooms_on_clock_.find(room);
  if (it != rooms_on_clock_.end() && it->second == retry_at)
    rooms_on_clock_.erase(it);
}

} // namespace comb::actors
