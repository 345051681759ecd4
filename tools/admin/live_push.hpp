// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>

#include "admin/output.hpp"
#include "storage/membership.hpp"

namespace comb::admin {

/// The bridge channel every pod subscribes to (actors/bridge/bridge_setup.cpp).
inline constexpr const char* bridge_channel = "comb:events";

/// After a committed change: publishes its list, then its deltas, as bridge envelopes on the
/// Redis channel, so every pod fans them out to connected clients at once. The stored list is
/// already right, so a missing or failed push is only a warning (on stderr, and `pushed_live`
/// in JSON). Without `redis_url`, says so: every pod delivers the change from its Postgres
/// notification anyway. Each envelope carries a MAC made with `secret` (pods drop any without
/// one, so without the secret nothing is pushed and the note says why).
void push_live(const std::string& redis_url, const std::string& secret, std::int64_t community_id,
               const storage::membership_write& write, reporter& out);

} // namespace comb::admin
