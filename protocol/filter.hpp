// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/event.hpp"

namespace comb::protocol {

/// `#x: [values]` in a filter: the event needs a tag named `x` whose value is one of `values`.
struct tag_condition {
  char name = 0;
  std::vector<std::string> values; // sorted, unique

  friend bool operator==(const tag_condition&, const tag_condition&) = default;
};

/// A NIP-01 filter. An absent field matches everything; a present one, even empty, must match.
/// Value lists are sorted and unique so matching is a binary search.
struct filter {
  std::optional<std::vector<bytes32>> ids;
  std::optional<std::vector<bytes32>> authors;
  std::optional<std::vector<std::uint32_t>> kinds;
  std::vector<tag_condition> tags;
  std::optional<std::int64_t> since;
  std::optional<std::int64_t> until;
  std::optional<std::uint32_t> limit;
  /// Never parsed, set by the relay (protocol/gift_wraps.hpp): the filter matches no gift wrap,
  /// since its reader is not the one recipient it names.
  bool gift_wraps_hidden = false;

  friend bool operator==(const filter&, const filter&) = default;
};

/// NIP-01 matching: values within a field are OR, fields are AND.
[[nodiscard]] bool matches(const filter& f, const event& ev) noexcept;

class event_tags;

/// The same, with the event's tags sorted once (`tags` holds `ev`'s): each tag condition is a
/// binary search, however many tags the event repeats.
[[nodiscard]] bool matches(const filter& f, const event& ev, const event_tags& tags) noexcept;

/// True if any filter matches (a REQ's filters are OR).
[[nodiscard]] bool matches_any(const std::vector<filter>& filters, const event& ev) noexcept;

/// True when the filter can never match anything (an empty value list), so no query is needed.
[[nodiscard]] bool matches_nothing(const filter& f) noexcept;

/// The limit of `f`: its own, else `default_limit` or, when higher, what it can match at most,
/// up to twice `default_limit` (10,000 by default): one per id it names, or one per author and
/// kind when it names only replaceable kinds. welshman merges a members page's profile loads
/// into one such filter, as long as the community, and names no limit.
[[nodiscard]] std::uint32_t effective_limit(const filter& f, std::uint32_t default_limit) noexcept;

/// Whether `f` may match events of `kind`: it names no kinds, or names that one.
[[nodiscard]] bool may_match_kind(const filter& f, std::uint32_t kind) noexcept;

} // namespace comb::protocol
