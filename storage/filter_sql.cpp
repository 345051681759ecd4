// SPDX-License-Identifier: MIT
#include "storage/filter_sql.hpp"

#include <algorithm>

#include "storage/event_rows.hpp"
#include "storage/pg_array.hpp"

namespace comb::storage {
namespace {

// $1 is always the community and $2 the current time; filters add theirs after them.
constexpr const char* scope_condition =
  "e.community_id = $1::bigint AND (e.expires_at IS NULL OR e.expires_at > $2::bigint)";
constexpr const char* newest_first = " ORDER BY e.created_at DESC, e.id";

class param_list {
public:
  param_list(std::int64_t community_id, std::int64_t now) {
    params_.emplace_back(std::to_string(community_id));
    params_.emplace_back(std::to_string(now));
  }

  /// Adds a value and returns its typed placeholder, e.g. "$3::bytea[]".
  std::string add(std::string value, std::string_view type) {
    params_.emplace_back(std::move(value));
    return '$' + std::to_string(params_.size()) + "::" + std::string(type);
  }

  pg_params take() { return std::move(params_); }

private:
  pg_params params_;
};

bool tag_can_match(const protocol::tag_condition& condition) {
  return std::any_of(condition.values.begin(), condition.values.end(),
                     [](const std::string& v) { return is_indexable_tag_value(v); });
}

bool can_match(const protocol::filter& f) {
  return !protocol::matches_nothing(f) && std::all_of(f.tags.begin(), f.tags.end(), tag_can_match);
}

std::string bytea_list(const std::vector<protocol::bytes32>& values) {
  pg_array array;
  for (const auto& value : values)
    array.add_bytea(value);
  return array.str();
}

std::string kind_list(const std::vector<std::uint32_t>& kinds) {
  pg_array array;
  for (auto kind : kinds)
    array.add_integer(kind);
  return array.str();
}

std::string tag_condition_sql(const protocol::tag_condition& condition, param_list& params) {
  pg_array values;
  for (const auto& value : condition.values)
    if (is_indexable_tag_value(value))
      values.add_text(value);
  std::string name = params.add(std::string(1, condition.name), "text");
  return " AND EXISTS (SELECT 1 FROM event_tags t WHERE t.community_id = e.community_id"
         " AND t.event_id = e.id AND t.name = "
         + name + " AND t.value = ANY(" + params.add(values.str(), "text[]") + "))";
}

/// The WHERE conditions of one filter that can match (see can_match).
std::string where_sql(const protocol::filter& f, param_list& params) {
  std::string sql = scope_condition;
  if (f.ids)
    sql += " AND e.id = ANY(" + params.add(bytea_list(*f.ids), "bytea[]") + ')';
  if (f.authors)
    sql += " AND e.pubkey = ANY(" + params.add(bytea_list(*f.authors), "bytea[]") + ')';
  if (f.kinds)
    sql += " AND e.kind = ANY(" + params.add(kind_list(*f.kinds), "int[]") + ')';
  if (f.since)
    sql += " AND e.created_at >= " + params.add(std::to_string(*f.since), "bigint");
  if (f.until)
    sql += " AND e.created_at <= " + params.add(std::to_string(*f.until), "bigint");
  for (const auto& condition : f.tags)
    sql += tag_condition_sql(condition, params);
  return sql;
}

std::string union_of(const std::vector<std::string>& selects) {
  std::string sql;
  for (const auto& select : selects) {
    if (!sql.empty())
      sql += " UNION ";
    sql += '(' + select + ')';
  }
  return sql;
}

} // namespace

std::optional<sql_statement> history_sql(std::int64_t community_id,
                                         const std::vector<protocol::filter>& filters,
                                         std::int64_t now,
                                         std::uint32_t default_limit) {
  param_list params(community_id, now);
  std::vector<std::string> selects;
  for (const auto& f : filters) {
    std::uint32_t limit = f.limit.value_or(default_limit);
    if (limit == 0 || !can_match(f))
      continue;
    std::string select = where_sql(f, params); // before the limit: placeholders number in order
    select += newest_first;
    select += " LIMIT " + params.add(std::to_string(limit), "bigint");
    selects.push_back(std::move(select));
  }
  if (selects.empty())
    return std::nullopt;
  if (selects.size() == 1)
    return sql_statement{"SELECT e.raw FROM events e WHERE " + selects.front(), params.take()};
  // Each filter keeps its own order and limit; the union removes events several filters found.
  for (auto& select : selects)
    select = "SELECT e.id, e.created_at FROM events e WHERE " + select;
  return sql_statement{"SELECT e.raw FROM (" + union_of(selects)
                         + ") AS m JOIN events e ON e.community_id = $1::bigint AND e.id = m.id"
                           " ORDER BY m.created_at DESC, m.id",
                       params.take()};
}

std::optional<sql_statement> count_sql(std::int64_t community_id,
                                       const std::vector<protocol::filter>& filters,
                                       std::int64_t now) {
  param_list params(community_id, now);
  std::vector<std::string> selects;
  for (const auto& f : filters)
    if (can_match(f))
      selects.push_back("SELECT e.id FROM events e WHERE " + where_sql(f, params));
  if (selects.empty())
    return std::nullopt;
  if (selects.size() == 1)
    return sql_statement{"SELECT count(*) FROM (" + selects.front() + ") AS m", params.take()};
  return sql_statement{"SELECT count(*) FROM (" + union_of(selects) + ") AS m", params.take()};
}

} // namespace comb::storage
