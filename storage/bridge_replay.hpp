// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_set>

#include "protocol/hex.hpp"

namespace comb::storage {

/// Why replay_guard::admit refused an envelope, or `fresh` when it may be delivered.
enum class replay_verdict {
  fresh,
  before_start, ///< sent before this pod started: it had no subscribers then, so no live reader
                ///< waits for it (clients read history from Postgres), and its dedup is empty
  below_floor,  ///< sent no later than an envelope the guard had to forget while it was young
  seen,         ///< this (community, event) already came, within the skew window
};

/// Keeps a pod from delivering one captured envelope twice inside the skew window
/// (bridge_envelope.hpp `envelope_max_skew_ms`, which refuses everything older), whatever
/// happened to its memory: a restart empties it, so envelopes sent before the start are refused;
/// and when it is full, forgetting an id whose envelope is still young would let a replay pass,
/// so it raises a floor to that envelope's send time instead and refuses everything sent no
/// later. The floor only rises past what a busy pod receives in one window (`capacity` per
/// minute); what it refuses then is counted by the caller. Pure: no clock of its own.
class replay_guard {
public:
  static constexpr std::size_t default_capacity = 100'000;

  explicit replay_guard(std::int64_t started_ms, std::size_t capacity = default_capacity);

  /// Whether the envelope of `event_id` in `community_id`, sent at `sent_ms` (already checked
  /// by its MAC and for staleness), is new here; remembers it when it is.
  replay_verdict admit(std::int64_t community_id, const protocol::bytes32& event_id,
                       std::int64_t sent_ms, std::int64_t now_ms);

  /// Envelopes sent at or before this are refused (besides those sent before the start).
  [[nodiscard]] std::int64_t floor() const noexcept { return floor_; }

  /// How many times a young id had to be forgotten and raised the floor.
  [[nodiscard]] std::uint64_t floor_raises() const noexcept { return floor_raises_; }

  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }

private:
  struct entry {
    std::int64_t community_id = 0;
    protocol::bytes32 id{};
    std::int64_t sent_ms = 0;
    friend bool operator==(const entry& a, const entry& b) {
      return a.community_id == b.community_id && a.id == b.id;
    }
  };
  struct entry_hash {
    std::size_t operator()(const entry& e) const noexcept {
      return protocol::bytes32_hash{}(e.id) ^ (std::hash<std::int64_t>{}(e.community_id) * 31);
    }
  };

  void forget_expired(std::int64_t now_ms);
  void forget_oldest(std::int64_t now_ms);

  std::int64_t started_ms_;
  std::size_t capacity_;
  std::int64_t floor_;
  std::uint64_t floor_raises_ = 0;
  std::unordered_set<entry, entry_hash> seen_;
  std::deque<entry> order_; ///< arrival order: the oldest is forgotten first
};

} // namespace comb::storage
