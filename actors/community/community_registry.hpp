// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "actors/community/ban_list.hpp"
#include "actors/community/community_hooks.hpp"
#include "actors/community/member_cache.hpp"
#include "storage/access_state.hpp"
#include "actors/metrics.hpp"

namespace comb::actors {

/// A community's actor and the member cache it keeps.
struct community_handle {
  caf::actor actor;
  member_cache_ptr members;
  ban_list_ptr bans;
  /// The key that signs the community's lists, deltas and room state (its primary host's,
  /// derived from the relay key); none when the registry was given no way to derive it.
  std::optional<protocol::bytes32> signer;
};

/// The public key signing for the community whose primary host is given.
using signer_of_host = std::function<protocol::bytes32(const std::string& primary_host)>;

/// The community actors of this pod, spawned on first use. Thread-safe.
class community_registry {
public:
  /// `on_lost` is told (by name) of a community actor that ends other than at the pod's
  /// shutdown (an uncaught exception): its queued membership and room requests would never be
  /// answered, so the pod stops, as for its other vital actors (watch_vital_actors).
  community_registry(caf::actor_system& system, caf::actor membership_writer, caf::actor fanout,
                     std::shared_ptr<relay_metrics> metrics = nullptr,
                     std::function<void(const std::string&)> on_lost = {});

  /// The handle of `community_id`; on first use spawns its actor with the state `load`
  /// returns. Nothing when `load` fails (the caller answers 503 and tries again later).
  [[nodiscard]] std::optional<community_handle>
  ensure(std::int64_t community_id,
         const std::function<std::optional<storage::community_access>()>& load);

  /// What community actors may ask of the socket edge (set by the pod once the server exists).
  [[nodiscard]] const std::shared_ptr<community_hooks>& hooks() const noexcept { return hooks_; }

  [[nodiscard]] std::optional<community_handle> find(std::int64_t community_id) const;

  /// The state version of `community_id` this pod holds whole (member_cache::whole_version);
  /// the newest possible when the pod does not serve it (nobody here reads it).
  [[nodiscard]] std::int64_t held_version(std::int64_t community_id) const;

  /// Drops a deleted community (its actor ends once the last connection lets it go).
  void forget(std::int64_t community_id);

  /// The bridge that community actors spawned from now on publish to.
  void set_bridge(caf::actor bridge);

  /// How communities spawned from now on learn their signer (community_handle::signer).
  void set_signer_of(signer_of_host signer_of);

  [[nodiscard]] std::vector<caf::actor> actors() const;

  [[nodiscard]] std::vector<std::int64_t> community_ids() const;

  /// Prometheus lines: members per community on this pod.
  [[nodiscard]] std::string render_member_counts() const;

private:
  caf::actor_system& system_;
  caf::actor membership_writer_;
  caf::actor fanout_;
  caf::actor bridge_;
  signer_of_host signer_of_;
  std::shared_ptr<relay_metrics> metrics_;
  std::function<void(const std::string&)> on_lost_;
  std::shared_ptr<community_hooks> hooks_ = std::make_shared<community_hooks>();
  mutable std::mutex mutex_;
  std::unordered_map<std::int64_t, community_handle> communities_;
};

} // namespace comb::actors
