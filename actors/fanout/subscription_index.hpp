// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/event_tags.hpp"
#include "protocol/filter.hpp"

namespace comb::actors {

/// The live subscriptions of one community, indexed so that an event is matched against the few
/// filters that could match it instead of all of them. Each filter is filed under its most
/// selective field: ids, else authors, else its first tag condition, else kinds, else "all".
/// A subscription an event matched, with the generation it was registered under, so the
/// connection can tell a delivery for a subscription it has since replaced.
struct matched_subscription {
  std::string id;
  std::uint64_t generation = 0;

  friend bool operator==(const matched_subscription&, const matched_subscription&) = default;
};

class subscription_index {
public:
  using owner_id = std::uint64_t;

  /// A subscription an event matched, pointing into the index: valid until the index changes.
  struct match_ref {
    owner_id owner = 0;
    const std::string* subscription_id = nullptr;
    std::uint64_t generation = 0;
  };

  /// Adds or replaces the subscription `(owner, subscription_id)`.
  void add(owner_id owner, const std::string& subscription_id, std::vector<protocol::filter> filters,
           std::uint64_t generation = 0);

  void remove(owner_id owner, const std::string& subscription_id);

  void remove_owner(owner_id owner);

  /// Every subscription with a filter matching `ev`, each once, grouped by owner.
  [[nodiscard]] std::vector<std::pair<owner_id, std::vector<matched_subscription>>>
  match(const protocol::event& ev) const;

  /// The same matches into `out` (cleared first), sorted by owner, then subscription id. It
  /// reuses the index's own scratch space, so the fan-out does not allocate per event. Returns
  /// how many filters it checked: each filter the event could match once, however many of the
  /// event's values (or copies of one tag) it is filed under.
  std::size_t match_into(const protocol::event& ev, std::vector<match_ref>& out) const;

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  /// Buckets held in the index (every one non-empty), for tests and bounds.
  [[nodiscard]] std::size_t bucket_count() const noexcept {
    return by_id_.size() + by_author_.size() + by_tag_.size() + by_kind_.size();
  }

private:
  struct entry;
  /// One filter of an entry in one bucket. `place` indexes the entry's `places`, which says
  /// where in the bucket it sits, so that removing it costs one swap, not a walk of the bucket.
  struct filter_ref {
    entry* owner_entry;
    std::uint32_t filter;
    std::uint32_t place;
  };
  using bucket = std::vector<filter_ref>;
  struct place {
    bucket* in;
    std::size_t at;
  };
  struct entry {
    owner_id owner = 0;
    std::string subscription_id;
    std::uint64_t generation = 0;
    std::vector<protocol::filter> filters;
    std::vector<place> places;
    /// Per filter, the last match_into turn that took it from a tag bucket: a filter filed
    /// under several of an event's tag values is matched once.
    mutable std::vector<std::uint64_t> taken_in_turn;
  };
  struct key_hash {
    std::size_t operator()(const std::pair<owner_id, std::string>& k) const noexcept {
      return std::hash<std::string>{}(k.second) ^ (k.first * 0x9e3779b97f4a7c15ULL);
    }
  };

  /// A filter with no ids, authors, tags or kinds: checked against every event.
  static bool is_broad(const protocol::filter& f) noexcept;
  /// Calls visit(map, key) for each bucket a filter that is not broad is filed in.
  template <class Visit>
  void for_each_bucket(const protocol::filter& f, Visit&& visit);
  void file(entry& e);
  static void file_in(bucket& b, entry& e, std::uint32_t filter);
  void unfile(entry& e);
  void collect(const bucket* b) const;
  /// Like collect, skipping filters this turn took already (a bucket of tag values).
  void collect_once(const bucket* b) const;

  std::unordered_map<std::pair<owner_id, std::string>, entry, key_hash> entries_;
  std::unordered_map<protocol::bytes32, bucket, protocol::bytes32_hash> by_id_;
  std::unordered_map<protocol::bytes32, bucket, protocol::bytes32_hash> by_author_;
  std::unordered_map<std::string, bucket> by_tag_; ///< key: tag letter + value
  std::unordered_map<std::uint32_t, bucket> by_kind_;
  bucket match_all_;
  /// Scratch space of match_into (one actor owns the index, so it is never shared).
  mutable std::vector<filter_ref> candidates_;
  mutable std::vector<const entry*> matched_;
  mutable protocol::event_tags event_tags_;
  mutable std::string tag_key_;
  mutable std::uint64_t turn_ = 0;
  std::unordered_map<owner_id, std::vector<std::string>> subscriptions_of_;
};

} // namespace comb::actors
