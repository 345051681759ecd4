// SPDX-License-Identifier: MIT
#include "storage/bridge_sequence.hpp"

#include <algorithm>

namespace comb::storage {

origin_sequences::origin_sequences(std::int64_t started_ms, std::size_t capacity)
  : started_ms_(started_ms), capacity_(std::max<std::size_t>(capacity, 1)) {}

std::optional<std::int64_t> origin_sequences::heard(std::string_view origin, envelope_number number,
                                                    bool heartbeat, std::int64_t now_ms,
                                                    std::optional<std::int64_t> sent_ms) {
  if (number.seq == 0 && !heartbeat)
    return std::nullopt; // not numbered: says nothing of what came before it
  const std::int64_t sent = sent_ms.value_or(now_ms);
  auto it = origins_.find(origin);
  if (it != origins_.end() && it->second.boot_ms == number.boot_ms) {
    run& known = it->second;
    if (heartbeat && sent <= known.newest_sent_ms && number.seq <= known.last_seq)
      return std::nullopt; // a replay, or late behind newer news: it tells nothing new
    if (!heartbeat && number.seq <= known.last_seq)
      return std::nullopt; // the second copy of an envelope (a replay, two transports)
    known.newest_sent_ms = std::max(known.newest_sent_ms, sent);
    const bool skipped = heartbeat ? number.seq > known.last_seq : number.seq > known.last_seq + 1;
    const std::int64_t since = known.heard_ms;
    known.last_seq = std::max(known.last_seq, number.seq);
    known.heard_ms = now_ms;
    known.quiet_marks_passed = 0;
    if (!skipped)
      return std::nullopt;
    return since;
  }
  if (it != origins_.end() && number.boot_ms < it->second.boot_ms)
    return std::nullopt; // late from a run since replaced: the newer run's count stands
  // A run not heard before: what it numbered before this one never came. A run that replaced
  // another may also follow a tail of the old run that never came.
  std::int64_t since = number.boot_ms;
  bool skipped = heartbeat ? number.seq >= 1 : number.seq > 1;
  if (it != origins_.end()) {
    since = std::min(since, it->second.heard_ms);
    skipped = true;
  } else if (origins_.size() >= capacity_) {
    forget_quietest();
    it = origins_.end();
  }
  if (it != origins_.end())
    it->second = run{number.boot_ms, number.seq, now_ms, 0, sent};
  else
    origins_.emplace(std::string(origin), run{number.boot_ms, number.seq, now_ms, 0, sent});
  if (!skipped)
    return std::nullopt;
  return std::max(since, started_ms_);
}

std::optional<std::int64_t> origin_sequences::quiet(std::int64_t now_ms) {
  std::optional<std::int64_t> since;
  for (auto& [name, known] : origins_) {
    const std::size_t passed_before = known.quiet_marks_passed;
    while (known.quiet_marks_passed < quiet_marks_ms.size()
           && now_ms - known.heard_ms >= quiet_marks_ms[known.quiet_marks_passed])
      ++known.quiet_marks_passed;
    if (known.quiet_marks_passed == passed_before)
      continue;
    const std::int64_t from =
      known.heard_ms + (passed_before == 0 ? 0 : quiet_marks_ms[passed_before - 1]);
    since = since ? std::min(*since, from) : from;
  }
  return since;
}

void origin_sequences::forget_quietest() {
  auto quietest = std::min_element(origins_.begin(), origins_.end(), [](const auto& a, const auto& b) {
    return a.second.heard_ms < b.second.heard_ms;
  });
  if (quietest != origins_.end())
    origins_.erase(quietest);
}

} // namespace comb::storage
