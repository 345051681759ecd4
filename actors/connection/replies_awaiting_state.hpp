// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "actors/lazy_deque.hpp"
#include "storage/event_store.hpp"

namespace comb::actors {

/// A history chunk for subscription `sub` (of `generation`), as the reader sent it.
struct history_chunk_reply {
  std::string sub;
  std::uint64_t generation = 0;
  storage::query_result result;
};

/// A COUNT's answer for the count of `ticket`, as the reader sent it.
struct count_reply {
  std::uint64_t ticket = 0;
  storage::count_result result;
};

using query_reply = std::variant<history_chunk_reply, count_reply>;

/// How long a reply waits for its pod to reach the state it was read at before it is refused:
/// as long as a bridged event waits (the access watcher's periodic check finds a change whose
/// notification was lost within a second).
inline constexpr double max_state_wait_seconds = 5.0;

/// The state version a reply was read at (0: no row read, nothing to hold it for).
[[nodiscard]] std::int64_t read_at(const query_reply& reply);

/// Query replies read from a database that had moved past the community state this pod holds:
/// another pod, or comb-admin, changed who may read what (a removal, a room made private) and
/// this pod has not loaded it yet. The rows are checked against the pod's state as they are
/// sent, so each waits until the pod holds the state it was read at (or its patience runs out:
/// it is then refused, not sent). Replies leave in the order they came, so a subscription's
/// chunks stay in order; one its subscription no longer takes does not wait. Bounded by what may be read for a connection at once (the history
/// budget and the COUNTs in flight).
class replies_awaiting_state {
public:
  explicit replies_awaiting_state(double patience_seconds) : patience_(patience_seconds) {}

  /// Whether a reply read at `read_at_version` must wait, the pod holding `held`: it was read
  /// past that, or replies before it wait.
  [[nodiscard]] bool must_wait(std::int64_t read_at_version, std::int64_t held) const {
    return !waiting_.empty() || read_at_version > held;
  }

  void wait(query_reply reply, double now);

  /// A reply that may go now; `late` when it waited past the patience (to be refused).
  struct released {
    query_reply reply;
    bool late = false;
  };

  /// Whether anyone still takes a reply (its subscription open, its COUNT unanswered): one
  /// nobody takes only gives back what it held, in any order.
  using taken_check = std::function<bool(const query_reply&)>;

  /// From the front, in order: the replies read at a state the pod holds now (`held`), and
  /// those that waited past the patience; and, wherever they wait, those nobody takes.
  [[nodiscard]] std::vector<released> release(std::int64_t held, double now, const taken_check& taken);

  [[nodiscard]] bool empty() const { return waiting_.empty(); }

private:
  struct entry {
    query_reply reply;
    double since = 0;
  };
  lazy_deque<entry> waiting_;
  double patience_;
};

} // namespace comb::actors
