// SPDX-License-Identifier: MIT
#include "actors/gateway/session_table.hpp"

#include "actors/messages.hpp"

namespace comb::actors {

std::uint64_t session_table::enroll(std::shared_ptr<websocket_outbox> outbox, caf::actor actor,
                                    std::int64_t community_id, const member_cache& community) {
  std::lock_guard lock(mutex_);
  if (stopping_)
    outbox->close(close_reason::going_away);
  else if (community.ended())
    outbox->close(close_reason::policy);
  std::uint64_t id = next_id_++;
  sessions_.emplace(id, entry{outbox, std::move(actor), community_id});
  return id;
}

void session_table::withdraw(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

void session_table::close_community(std::int64_t community_id) {
  std::lock_guard lock(mutex_);
  for (auto& [id, session] : sessions_)
    if (session.community_id == community_id)
      if (auto outbox = session.outbox.lock())
        outbox->close(close_reason::policy);
}

void session_table::recheck_community(std::int64_t community_id) {
  std::lock_guard lock(mutex_);
  for (auto& [id, session] : sessions_)
    if (session.community_id == community_id)
      caf::anon_send(session.actor, access_atom_v, community_id);
}

void session_table::end_remaining_actors() {
  std::lock_guard lock(mutex_);
  for (auto& [id, session] : sessions_)
    caf::anon_send_exit(session.actor, caf::exit_reason::user_shutdown);
}

void session_table::drain() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (auto& [id, session] : sessions_)
    caf::anon_send(session.actor, drain_atom_v);
}

std::vector<std::shared_ptr<websocket_outbox>> session_table::stop() {
  std::vector<std::shared_ptr<websocket_outbox>> open;
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (auto& [id, session] : sessions_)
    if (auto outbox = session.outbox.lock())
      open.push_back(std::move(outbox));
  return open;
}

std::size_t session_table::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

} // namespace comb::actors
