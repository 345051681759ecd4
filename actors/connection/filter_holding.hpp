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
/// bytes of index), and the broad ones (no id, author, kind or tag: checked against every event
/// of their community).
struct filter_holding {
  std::size_t filters = 0;
  std::size_t values = 0;
  std::size_t broad = 0;

  /// The first count that adding `more` would take past `most`; none when all stay within it.
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
    return *this;
  }
  /// Takes away at most what is held, field by field.
  filter_holding& operator-=(const filter_holding& fewer) noexcept {
    filters -= std::min(filters, fewer.filters);
    values -= std::min(values, fewer.values);
    broad -= std::min(broad, fewer.broad);
    return *this;
  }
  /// What `to` holds beyond this (grown) and this beyond `to` (shrunk), field by field.
  [[nodiscard]] filter_holding grown_to(const filter_holding& to) const noexcept {
    return {to.filters > filters ? to.filters - filters : 0, to.values > values ? to.values - values : 0,
            to.broad > broad ? to.broad - broad : 0};
  }
  [[nodiscard]] filter_holding shrunk_to(const filter_holding& to) const noexcept { return to.grown_to(*this); }
  [[nodiscard]] bool operator==(const filter_holding&) const = default;
};

} // namespace comb::actors
