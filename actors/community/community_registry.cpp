// SPDX-License-Identifier: MIT
#include "actors/community/community_registry.hpp"

#include <limits>

#include "actors/community/community_actor.hpp"
#include "actors/vital_watch.hpp"

namespace comb::actors {

namespace {

/// Tells `on_lost` when `actor` ends other than at the pod's shutdown.
void report_loss(const caf::actor& actor, std::int64_t community_id,
                 const std::function<void(const std::string&)>& on_lost) {
  if (!on_lost)
    return;
  auto* system = &actor->home_system();
  caf::actor_cast<caf::abstract_actor*>(actor)->attach_functor(
    [on_lost, community_id, system](const caf::error& reason) {
      if (ended_by_failure(reason))
        on_lost("the actor of community " + std::to_string(community_id) + " ended ("
                + system->render(reason) + ")");
    });
}

} // namespace

community_registry::community_registry(caf::actor_system& system, caf::actor membership_writer,
                                       caf::actor fanout, std::shared_ptr<relay_metrics> metrics,
                                       std::function<void(const std::string&)> on_lost)
  : system_(system),
    membership_writer_(std::move(membership_writer)),
    fanout_(std::move(fanout)),
    metrics_(std::move(metrics)),
    on_lost_(std::move(on_lost)) {}

std::optional<community_handle> community_registry::ensure(
  std::int64_t community_id,
  const std::function<std::optional<storage::community_access>()>& load) {
  if (auto known = find(community_id))
    return known;
  // Loaded outside the lock: a slow database must not stall lookups of other communities.
  auto state = load();
  if (!state)
    return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = communities_.find(community_id);
  if (it != communities_.end())
    return it->second;
  auto cache = std::make_shared<member_cache>();
  (void)cache->replace(state->members);
  cache->set_closed(state->closed);
  cache->set_members_may_invite(state->members_may_invite);
  cache->set_ended(!state->exists || state->archived);
  cache->set_access_version(state->version);
  cache->set_version(state->version);
  cache->set_rooms(std::make_shared<const room_index>(state->rooms), state->version);
  auto ban_cache = std::make_shared<ban_list>();
  ban_cache->replace(state->bans, state->version);
  auto actor = system_.spawn(community_actor,
                             community_args{community_id, cache, membership_writer_, fanout_, bridge_,
                                            512, metrics_, hooks_, ban_cache});
  report_loss(actor, community_id, on_lost_);
  std::optional<protocol::bytes32> signer;
  if (signer_of_ && state->exists)
    signer = signer_of_(state->host);
  return communities_.emplace(community_id, community_handle{actor, cache, ban_cache, signer}).first->second;
}

std::optional<community_handle> community_registry::find(std::int64_t community_id) const {
  std::lock_guard lock(mutex_);
  auto it = communities_.find(community_id);
  if (it == communities_.end())
    return std::nullopt;
  return it->second;
}

std::int64_t community_registry::held_version(std::int64_t community_id) const {
  std::lock_guard lock(mutex_);
  auto it = communities_.find(community_id);
  if (it == communities_.end())
    return std::numeric_limits<std::int64_t>::max();
  return it->second.members->whole_version();
}

void community_registry::forget(std::int64_t community_id) {
  std::lock_guard lock(mutex_);
  communities_.erase(community_id);
}

void community_registry::set_bridge(caf::actor bridge) {
  std::lock_guard lock(mutex_);
  bridge_ = std::move(bridge);
}

void community_registry::set_signer_of(signer_of_host signer_of) {
  std::lock_guard lock(mutex_);
  signer_of_ = std::move(signer_of);
}

std::vector<caf::actor> community_registry::actors() const {
  std::lock_guard lock(mutex_);
  std::vector<caf::actor> out;
  for (const auto& [id, handle] : communities_)
    out.push_back(handle.actor);
  return out;
}

std::string community_registry::render_member_counts() const {
  std::lock_guard lock(mutex_);
  std::string out = "# HELP comb_community_members Members of each community known to this pod.\n"
                    "# TYPE comb_community_members gauge\n";
  for (const auto& [id, handle] : communities_)
    out += "comb_community_members{community=\"" + std::to_string(id) + "\"} "
           + std::to_string(handle.members->size()) + "\n";
  return out;
}

std::vector<std::int64_t> community_registry::community_ids() const {
  std::lock_guard lock(mutex_);
  std::vector<std::int64_t> out;
  for (const auto& [id, handle] : communities_)
    out.push_back(id);
  return out;
}

} // namespace comb::actors
