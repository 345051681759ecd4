// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>

namespace comb::actors {

/// One of the three counts of a filter_holding.
enum class filter_bound { filters, values, broad };

/// What subscriptions hold in the fan-out index: filters (each checked against every event
/// filed under what it names), their values (ids, authors, kinds, tag values: each about 180
/// bytes of index), the broad ones (no id, author, kind or tag: checked against every event of
/// their community), and the values' bytes.
struct filter_holding {
  std::size_t filters = 0;
  std::size_t values = 0;
  std::size_t broad = 0;
  std::size_t value_bytes = 0; ///< tag values' lengths, and 32 per id or author

  /// The first count that adding `more` would take past `most`; none when all stay within it.
  /// The values' bytes are bounded per connection only (over_budget), not here.
  [[nodiscard]] std::optional<filter_bound> exceeded(const filter_holding& more,
                                                     const filter_holding& most) const noexcept {
    if (filters + more.filters > most.filters)
      return filter_bound::filters;
    if (values + more.values > most.values)
      return filter_bound::values;
    if (broad + more.broad > most.broad)
      return filter_bound::broad;
    return std::nullopt;
  }
  filter_holding& operator+=(const filter_holding& more) noexcept {
    filters += more.filters;
    values += more.values;
    broad += more.broad;
    value_bytes += more.value_bytes;
    return *this;
  }
  /// Takes away at most what is held, field by field.
  filter_holding& operator-=(const filter_holding& fewer) noexcept {
    filters -= std::min(filters, fewer.filters);
    values -= std::min(values, fewer.values);
    broad -= std::min(broad, fewer.broad);
    value_bytes -= std::min(value_bytes, fewer.value_bytes);
    return *this;
  }
  /// What `to` holds beyond this (grown) and this beyond `to` (shrunk), field by field.
  [[nodiscard]] filter_holding grown_to(const filter_holding& to) const noexcept {
    auto beyond = [](std::size_t a, std::size_t b) { return a > b ? a - b : 0; };
    return {beyond(to.filters, filters), beyond(to.values, values), beyond(to.broad, broad),
            beyond(to.value_bytes, value_bytes)};
  }
  [[nodiscard]] filter_holding shrunk_to(const filter_holding& to) const noexcept { return to.grown_to(*this); }
  [[nodiscard]] bool operator==(const filter_holding&) const = default;
};

} // namespace comb::actors
