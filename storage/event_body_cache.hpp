// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/event.hpp"

namespace comb::storage {

/// Where a body comes from: the event's (community, id), and the row version that holds it
/// (the row's `xmin`, the transaction that inserted it). A stored event's JSON never changes
/// while its row lives, but a row deleted and stored again (a ban lifted, a newer version
/// deleted) may carry another signature, and a community may hold the same id with another
/// signature than its neighbour: only the same row version is the same body.
struct body_key {
  std::int64_t community_id = 0;
  protocol::bytes32 id{};
  std::uint32_t version = 0;
};

/// An event's JSON as the cache holds it: shared with every reply that sends it, so a hit
/// costs no copy (and no allocation on the reader's thread freed on the socket's).
using shared_body = std::shared_ptr<const std::string>;

/// Counters of an event_body_cache, read at any time by any thread.
struct body_cache_counts {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t bytes = 0;   ///< held now, bodies plus a fixed cost per entry
  std::uint64_t entries = 0; ///< held now
};

/// Stored events' JSON by (community, id, row version), bounded by bytes; the oldest entry not
/// read since it was last passed over goes first (second chance: a read sets a flag and moves
/// nothing, so a read touches only its own entry). The database still decides which events
/// answer a REQ (their ids and row versions); this only spares it sending bodies the pod already
/// holds. Safe for any number of threads: entries are spread over shards, each behind its own
/// mutex.
class event_body_cache {
public:
  /// Counted against the bound for each entry besides its body: key, map node, order slot,
  /// and the shared string's own header and control block.
  static constexpr std::size_t entry_overhead = 192;

  explicit event_body_cache(std::size_t max_bytes);

  event_body_cache(const event_body_cache&) = delete;
  event_body_cache& operator=(const event_body_cache&) = delete;

  /// Appends the body held for `key` to `out` and returns true; false (counted as a miss) when
  /// none or another version is held. The copy is made under the shard's lock: a reader copies
  /// the body into its frame anyway, and so touches nothing shared but the entry.
  bool append_to(const body_key& key, std::string& out);

  /// For each of `keys` held, `bodies[i]` shares its body; the others are left alone (null).
  /// A page's rows are looked up shard by shard, one lock each, their buckets prefetched before
  /// any is looked up: each look-up is a few cache misses in a large map, and taken one at a
  /// time (a lock each) they cannot overlap.
  void share_all(std::span<const body_key> keys, std::span<shared_body> bodies);

  /// The body held for `key`, or nothing, as append_to counts it.
  [[nodiscard]] std::optional<std::string> find(const body_key& key);

  /// Holds `body` for `key` (replacing what was held for its community and id), then drops
  /// entries of its shard until the shard is within its share of the bound. A body larger than
  /// a shard's share is not held.
  void remember(const body_key& key, std::string_view body);
  /// As above, holding `body` itself (a stored event's JSON, shared with its write).
  void remember(const body_key& key, shared_body body);

  [[nodiscard]] body_cache_counts counts() const noexcept;
  [[nodiscard]] std::size_t max_bytes() const noexcept { return shard_bytes_ * shard_count; }

private:
  static constexpr std::size_t shard_count = 16;

  struct id_key {
    std::int64_t community_id = 0;
    protocol::bytes32 id{};
    bool operator==(const id_key&) const = default;
  };
  struct id_hash {
    std::size_t operator()(const id_key& key) const noexcept;
  };
  struct entry {
    std::uint32_t version = 0;
    bool read = false; ///< read since the eviction hand last passed it
    shared_body body;
  };
  struct shard {
    std::mutex mutex;
    std::unordered_map<id_key, entry, id_hash> index;
    std::deque<id_key> order; ///< oldest first; each key of `index` once
    std::size_t bytes = 0;
  };

  shard& shard_of(const id_key& key) noexcept;
  void drop_one(shard& s);

  std::size_t shard_bytes_;
  std::unique_ptr<shard[]> shards_;
  std::atomic<std::uint64_t> hits_{0};
  std::atomic<std::uint64_t> misses_{0};
  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> entries_{0};
};

} // namespace comb::storage
