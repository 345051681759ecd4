// SPDX-License-Identifier: MIT
#include "protocol/event_tags.hpp"

#include <algorithm>

namespace comb::protocol {
namespace {

/// Orders pairs by their name alone, to find the range of one name.
struct by_name {
  bool operator()(const std::pair<char, std::string_view>& p, char n) const noexcept { return p.first < n; }
  bool operator()(char n, const std::pair<char, std::string_view>& p) const noexcept { return n < p.first; }
};

} // namespace

void event_tags::assign(const event& ev) {
  pairs_.clear();
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0].size() == 1)
      pairs_.emplace_back(t[0][0], t[1]);
  std::sort(pairs_.begin(), pairs_.end());
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());
}

bool event_tags::has_any(char name, const std::vector<std::string>& sorted_values) const noexcept {
  // Not a structured binding: the lambdas below capture both, which clang (the fuzz build)
  // refuses for bindings before C++20's later rules.
  const auto range = std::equal_range(pairs_.begin(), pairs_.end(), name, by_name{});
  const auto first = range.first, last = range.second;
  // Search the longer side for each element of the shorter one.
  if (static_cast<std::size_t>(last - first) <= sorted_values.size())
    return std::any_of(first, last, [&](const auto& p) {
      return std::binary_search(sorted_values.begin(), sorted_values.end(), p.second);
    });
  return std::any_of(sorted_values.begin(), sorted_values.end(), [&](const std::string& value) {
    auto at = std::lower_bound(first, last, std::string_view(value),
                               [](const auto& p, std::string_view v) { return p.second < v; });
    return at != last && at->second == value;
  });
}

} // namespace comb::protocol
