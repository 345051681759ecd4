// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "protocol/event.hpp"

namespace comb::protocol {

/// An event's single-letter tags as sorted, distinct (name, value) pairs, so that matching many
/// filters against one event costs each tag condition a binary search, not a scan of every tag:
/// an event may carry 5,000 tags, the same one repeated, and live matching sees it once per
/// subscription it could match. Views into the event, which must outlive it.
class event_tags {
public:
  /// Takes `ev`'s tags, reusing the space of the last event.
  void assign(const event& ev);

  /// Whether a tag named `name` has one of `sorted_values` (sorted, unique) as its value.
  [[nodiscard]] bool has_any(char name, const std::vector<std::string>& sorted_values) const noexcept;

  /// Each distinct (name, value) pair, in order.
  [[nodiscard]] const std::vector<std::pair<char, std::string_view>>& pairs() const noexcept {
    return pairs_;
  }

private:
  std::vector<std::pair<char, std::string_view>> pairs_;
};

} // namespace comb::protocol
