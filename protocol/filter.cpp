// SPDX-License-Identifier: MIT
#include "protocol/filter.hpp"

#include <algorithm>

#include "protocol/event_tags.hpp"
#include "protocol/gift_wraps.hpp"

namespace comb::protocol {
namespace {

template <class T>
bool contains_sorted(const std::optional<std::vector<T>>& values, const T& value) noexcept {
  return !values || std::binary_search(values->begin(), values->end(), value);
}

bool tag_condition_holds(const tag_condition& condition, const event& ev) noexcept {
  for (const auto& t : ev.tags) {
    if (t.size() < 2 || t[0].size() != 1 || t[0][0] != condition.name)
      continue;
    if (std::binary_search(condition.values.begin(), condition.values.end(), t[1]))
      return true;
  }
  return false;
}

/// Every field but the tag conditions.
bool matches_untagged(const filter& f, const event& ev) noexcept {
  if (f.gift_wraps_hidden && is_gift_wrap_kind(ev.kind))
    return false;
  if (f.since && ev.created_at < *f.since)
    return false;
  if (f.until && ev.created_at > *f.until)
    return false;
  return contains_sorted(f.kinds, ev.kind) && contains_sorted(f.authors, ev.pubkey)
         && contains_sorted(f.ids, ev.id);
}

} // namespace

bool matches(const filter& f, const event& ev) noexcept {
  return matches_untagged(f, ev)
         && std::all_of(f.tags.begin(), f.tags.end(),
                        [&](const tag_condition& c) { return tag_condition_holds(c, ev); });
}

bool matches(const filter& f, const event& ev, const event_tags& tags) noexcept {
  return matches_untagged(f, ev)
         && std::all_of(f.tags.begin(), f.tags.end(),
                        [&](const tag_condition& c) { return tags.has_any(c.name, c.values); });
}

bool matches_any(const std::vector<filter>& filters, const event& ev) noexcept {
  return std::any_of(filters.begin(), filters.end(),
                     [&](const filter& f) { return matches(f, ev); });
}

bool matches_nothing(const filter& f) noexcept {
  auto empty = [](const auto& values) { return values && values->empty(); };
  if (empty(f.ids) || empty(f.authors) || empty(f.kinds))
    return true;
  if (f.since && f.until && *f.since > *f.until)
    return true;
  return std::any_of(f.tags.begin(), f.tags.end(),
                     [](const tag_condition& c) { return c.values.empty(); });
}

bool may_match_kind(const filter& f, std::uint32_t kind) noexcept {
  return !f.kinds || std::find(f.kinds->begin(), f.kinds->end(), kind) != f.kinds->end();
}

namespace {

/// At most how many events `f` can match, when its fields bound that; else nothing.
std::optional<std::uint64_t> most_matched(const filter& f) noexcept {
  if (f.ids)
    return f.ids->size();
  if (!f.authors || !f.kinds)
    return std::nullopt;
  for (auto kind : *f.kinds)
    if (classify(kind) != kind_class::replaceable)
      return std::nullopt;
  return static_cast<std::uint64_t>(f.authors->size()) * f.kinds->size();
}

} // namespace

std::uint32_t effective_limit(const filter& f, std::uint32_t default_limit) noexcept {
  if (f.limit)
    return *f.limit;
  auto most = most_matched(f);
  if (!most || *most <= default_limit)
    return default_limit;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(*most, 2ULL * default_limit));
}

} // namespace comb::protocol
