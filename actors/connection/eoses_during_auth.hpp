// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
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
/// open under the REQ it had gets its EOSE once more. A REQ is taken as sent again when its id
/// got an EOSE, or was open or waiting when the OK was sent: a space opens with a hundred REQs
/// or more, the 51 sent again may all still wait for a storage reader, and the EOSEs lost are
/// then those of the earlier ones. A client that sends nothing again (nostr-tools) gets no
/// second EOSE; one that does ignores it (NIP-01 clients take the first).
class eoses_during_auth {
public:
  /// Subscriptions remembered at most (the subscription cap is 500).
  static constexpr std::size_t max_kept = 1000;
  /// How long after the OK a REQ sent again is looked for: welshman reads 200 messages a second.
  static constexpr double resend_window_seconds = 30;
  /// Without an AUTH this long after the first EOSE, none is coming (a client that does not
  /// answer the challenge, nostr-tools reading anonymously): nothing more is remembered.
  static constexpr double auth_expected_within_seconds = 20;

  /// The subscription `id`, opened as `generation`, was sent its EOSE at `now` (seconds).
  void sent(const std::string& id, std::uint64_t generation, double now) {
    if (done_)
      return;
    if (!first_at_)
      first_at_ = now;
    if ((ok_at_ && now - *ok_at_ > resend_window_seconds)
        || (!ok_at_ && now - *first_at_ > auth_expected_within_seconds)) {
      finish();
      return;
    }
    if (sent_.size() < max_kept || sent_.contains(id))
      sent_[id] = generation;
  }

  /// The connection's AUTH was answered OK at `now`, while the subscriptions `open` were open or
  /// waiting (a REQ of one of them sent later is one sent again).
  void auth_ok(double now, const std::vector<std::string>& open) {
    if (ok_at_ || done_)
      return;
    ok_at_ = now;
    for (const auto& id : open) {
      if (open_at_ok_.size() >= max_kept)
        break;
      open_at_ok_.insert(id);
    }
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
    if (!sent_.contains(id) && !open_at_ok_.contains(id))
      return {};
    sent_.erase(id);
    std::vector<std::pair<std::string, std::uint64_t>> lost(sent_.begin(), sent_.end());
    finish();
    return lost;
  }

private:
  void finish() {
    done_ = true;
    sent_.clear();
    open_at_ok_.clear();
  }

  std::map<std::string, std::uint64_t> sent_; ///< by id: its REQ's generation when it ended
  std::set<std::string> open_at_ok_;
  std::optional<double> first_at_;
  std::optional<double> ok_at_;
  bool done_ = false;
};

} // namespace comb::actors
