// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace comb::actors {

/// What a community actor may ask of the socket edge when the database changed its access;
/// set once the server exists (before that there are no connections to act on).
class community_hooks {
public:
  using action = std::function<void(std::int64_t community_id)>;

  void set(action close_all, action recheck_all, action forget_hosts) {
    std::lock_guard lock(mutex_);
    close_all_ = std::move(close_all);
    recheck_all_ = std::move(recheck_all);
    forget_hosts_ = std::move(forget_hosts);
  }

  /// Archived or deleted: every connection of the community ends.
  void close_all(std::int64_t community_id) const { call(close_all_, community_id); }

  /// Access changed: every connection checks whether it may stay.
  void recheck_all(std::int64_t community_id) const { call(recheck_all_, community_id); }

  /// Hosts, access or archive changed: the socket edge's cached host lookups naming the
  /// community are stale.
  void forget_hosts(std::int64_t community_id) const { call(forget_hosts_, community_id); }

private:
  void call(const action& what, std::int64_t community_id) const {
    action copy;
    {
      std::lock_guard lock(mutex_);
      copy = what;
    }
    if (copy)
      copy(community_id);
  }

  mutable std::mutex mutex_;
  action close_all_;
  action recheck_all_;
  action forget_hosts_;
};

} // namespace comb::actors
