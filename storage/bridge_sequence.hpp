// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace comb::storage {

/// Where an envelope stands in its origin's numbering: the origin's run (its start time, so a
/// pod restarted under the same node id starts a new count) and the envelope's number in it,
/// 1, 2, 3... for every envelope it sent to all pods. 0: not numbered (comb-admin's pushes, the
/// start-up lists sent to one new peer, pods of earlier versions).
struct envelope_number {
  std::int64_t boot_ms = 0;
  std::uint64_t seq = 0;
};

/// Tells a pod when it has missed some of another pod's envelopes, whatever lost them: a
/// sender's Redis link down while its publishes were dropped (the other pods' links stayed up,
/// so none of them saw a loss), a publish shed under load, a cluster link that dropped and came
/// back from a restarted peer under another node id, a pod that accepted events before it
/// linked. Each pod numbers what it sends to all and repeats its last number every few seconds
/// (a heartbeat), so a gap shows within one heartbeat even when the sender goes quiet. Bounded:
/// it remembers `capacity` origins, forgetting the one heard from longest ago. Pure: no clock.
class origin_sequences {
public:
  static constexpr std::size_t default_capacity = 4096;

  explicit origin_sequences(std::int64_t started_ms, std::size_t capacity = default_capacity);

  /// Something numbered `number` came from `origin` at `now_ms`: an event envelope (its own
  /// number) or a heartbeat (`heartbeat`: the last number the origin used). The time since
  /// which this pod may have missed some of the origin's envelopes, when it may have: since it
  /// last heard from the origin's run, or since the run began (not before this pod started,
  /// which had no subscribers then). A heartbeat sent (`sent_ms`, the origin's clock; `now_ms`
  /// when not given) no later than the newest thing heard from the run, and numbering nothing
  /// newer, is ignored: a replayed
  /// one (anyone who may PUBLISH on the channel can send one again within the bridge's minute)
  /// would otherwise push back the marks of a pod gone quiet.
  [[nodiscard]] std::optional<std::int64_t> heard(std::string_view origin, envelope_number number,
                                                  bool heartbeat, std::int64_t now_ms,
                                                  std::optional<std::int64_t> sent_ms = std::nullopt);

  /// How long an origin may be silent before what it stored may never come: its heartbeat is
  /// due every 2 s, so three missed ones are the first mark; the later marks catch what a pod
  /// cut off from the transports stored afterwards, should it die before it is heard again.
  static constexpr std::array<std::int64_t, 5> quiet_marks_ms{6'000, 20'000, 60'000, 180'000, 600'000};

  /// At `now_ms`, the earliest time since which a silent origin's envelopes may not have come,
  /// when one's silence passed another of `quiet_marks_ms` since the last call: a pod that died
  /// while its own Redis link was down (or cut off from every peer) never sends the heartbeat
  /// that would show the gap. The first mark reaches back to when the origin was last heard,
  /// each later one to the mark before it (whose fill read what was stored until then). Heard
  /// again, an origin starts from the first mark; silent past the last, it is asked for no more
  /// and stays known (heard again, a gap reaches back to when it was last heard, not to when
  /// its run began), until the bound forgets it.
  [[nodiscard]] std::optional<std::int64_t> quiet(std::int64_t now_ms);

  [[nodiscard]] std::size_t size() const noexcept { return origins_.size(); }

private:
  struct run {
    std::int64_t boot_ms = 0;
    std::uint64_t last_seq = 0;
    std::int64_t heard_ms = 0;
    std::size_t quiet_marks_passed = 0;
    std::int64_t newest_sent_ms = 0; ///< the origin's clock
  };

  /// Looks origins up by a view of the envelope's text: no string made per envelope.
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept {
      return std::hash<std::string_view>{}(name);
    }
  };

  void forget_quietest();

  std::int64_t started_ms_;
  std::size_t capacity_;
  std::unordered_map<std::string, run, name_hash, std::equal_to<>> origins_;
};

} // namespace comb::storage
