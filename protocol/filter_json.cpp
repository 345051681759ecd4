// SPDX-License-Identifier: MIT
#include "protocol/filter_json.hpp"

#include <algorithm>
#include <cctype>
#include <boost/json.hpp>

namespace comb::protocol {
namespace json = boost::json;
namespace {

template <class T>
void sort_unique(std::vector<T>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

std::optional<rejection> check_list(const json::value& v, std::string_view field,
                                    const protocol_limits& limits) {
  if (!v.is_array())
    return invalid(std::string(field) + " must be an array");
  if (v.get_array().size() > limits.max_values_per_filter_field)
    return invalid("too many values in " + std::string(field));
  return std::nullopt;
}

std::optional<rejection> parse_hex_list(const json::value& v, std::string_view field,
                                        const protocol_limits& limits,
                                        std::optional<std::vector<bytes32>>& out) {
  if (auto bad = check_list(v, field, limits))
    return bad;
  auto& values = out.emplace();
  values.reserve(v.get_array().size());
  for (const auto& item : v.get_array()) {
    bytes32 value{};
    if (!item.is_string() || !decode_lower_hex(item.get_string(), value))
      return invalid(std::string(field) + " must hold 64-character lowercase hex strings");
    values.push_back(value);
  }
  sort_unique(values);
  return std::nullopt;
}

std::optional<rejection> parse_kinds(const json::value& v, const protocol_limits& limits,
                                     std::optional<std::vector<std::uint32_t>>& out) {
  if (auto bad = check_list(v, "kinds", limits))
    return bad;
  auto& values = out.emplace();
  for (const auto& item : v.get_array()) {
    if (!item.is_int64() || item.get_int64() < 0 || item.get_int64() > 65535)
      return invalid("kinds must hold integers between 0 and 65535");
    values.push_back(static_cast<std::uint32_t>(item.get_int64()));
  }
  sort_unique(values);
  return std::nullopt;
}

std::optional<rejection> parse_tag(std::string_view key, const json::value& v,
                                   const protocol_limits& limits, filter& out) {
  char name = key[1];
  if (!std::isalpha(static_cast<unsigned char>(name)))
    return invalid("tag filters must be # and one letter");
  if (auto bad = check_list(v, key, limits))
    return bad;
  tag_condition condition{name, {}};
  for (const auto& item : v.get_array()) {
    if (!item.is_string())
      return invalid(std::string(key) + " must hold strings");
    condition.values.emplace_back(item.get_string());
  }
  sort_unique(condition.values);
  for (const auto& existing : out.tags)
    if (existing.name == name)
      return invalid("duplicate tag filter");
  out.tags.push_back(std::move(condition));
  return std::nullopt;
}

std::optional<std::int64_t> non_negative(const json::value& v) {
  if (!v.is_int64() || v.get_int64() < 0)
    return std::nullopt;
  return v.get_int64();
}

std::optional<rejection> parse_field(std::string_view key, const json::value& v,
                                     const protocol_limits& limits, filter& out) {
  if (key == "ids")
    return parse_hex_list(v, key, limits, out.ids);
  if (key == "authors")
    return parse_hex_list(v, key, limits, out.authors);
  if (key == "kinds")
    return parse_kinds(v, limits, out.kinds);
  if (key.size() == 2 && key[0] == '#')
    return parse_tag(key, v, limits, out);
  if (key == "since" || key == "until" || key == "limit") {
    auto n = non_negative(v);
    if (!n)
      return invalid(std::string(key) + " must be a non-negative integer");
    if (key == "since")
      out.since = *n;
    else if (key == "until")
      out.until = *n;
    else
      out.limit = static_cast<std::uint32_t>(std::min<std::int64_t>(*n, limits.max_limit));
    return std::nullopt;
  }
  // NIP-50 search and the like: a client that sends them learns this relay does not do them.
  return rejection{reason::unsupported, "filter contains unknown elements"};
}

} // namespace

result<filter> filter_from_json(const json::value& value, const protocol_limits& limits) {
  if (!value.is_object())
    return invalid("a filter must be a JSON object");
  filter out;
  for (const auto& entry : value.get_object())
    if (auto bad = parse_field(entry.key(), entry.value(), limits, out))
      return *bad;
  return out;
}

} // namespace comb::protocol
