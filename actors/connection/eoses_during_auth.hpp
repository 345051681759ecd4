// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace comb::actors {

/// welshman drops every EOSE that reaches it while its AUTH is under way (from the challenge,
/// which comb sends as a connection opens, until it has read the AUTH's OK, behind whatever it
/// received before), and once it has read the OK sends again only the last 51 messages it sent
/// before. A request it does not send again never ends: Flotilla's room and thread pages keep
/// "Looking for messages". So the EOSEs sent until then are remembered, and when the first REQ
/// sent again after the OK arrives (welshman has read the OK by then), each subscription still
/// open under the REQ it had gets its EOSE once more. A client that sends nothing again
/// (nostr-tools) gets no second EOSE; one that does ignores it (NIP-01 clients take the first).
class eoses_during_auth {
public:
  /// EOSEs remembered at most (the oldest go first); the subscription cap is 500.
  static constexpr std::size_t max_kept = 1000;
  /// How long after the OK a REQ sent again is looked for: welshman reads 200 messages a second.
  static constexpr double resend_window_seconds = 30;

  /// The subscription `id`, opened as `generation`, was sent its EOSE.
  void sent(const std::string& id, std::uint64_t generation) {
    if (done_)
      return;
    if (sent_.size() >= max_kept)
      sent_.erase(sent_.begin());
    sent_.emplace_back(id, generation);
  }

  /// The connection's AUTH was answered OK at `now` (seconds).
  void auth_ok(double now) {
    if (!ok_at_)
      ok_at_ = now;
  }

  /// A REQ of `id` arrived at `now`. When it is one sent again after the OK: the subscriptions
  /// (id, generation) whose EOSE may have been lost, but `id`'s own, which its answer ends
  /// anew; none ever after.
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> on_req(const std::string& id, double now) {
    if (done_ || !ok_at_)
      return {};
    if (now - *ok_at_ > resend_window_seconds) {
      finish();
      return {};
    }
    bool again = false;
    for (const auto& entry : sent_)
      again = again || entry.first == id;
    if (!again)
      return {};
    auto lost = std::move(sent_);
    std::erase_if(lost, [&](const auto& entry) { return entry.first == id; });
    finish();
    return lost;
  }

private:
  void finish() {
    done_ = true;
    sent_.clear();
    sent_.shrink_to_fit();
  }

  std::vector<std::pair<std::string, std::uint64_t>> sent_;
  std::optional<double> ok_at_;
  bool done_ = false;
};

} // namespace comb::actors
