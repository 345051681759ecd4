// SPDX-License-Identifier: MIT
#include "storage/filter_sql.hpp"

#include <algorithm>
#include <cstddef>

#include "protocol/gift_wraps.hpp"
#include "protocol/room.hpp"
#include "storage/event_rows.hpp"
#include "storage/pg_array.hpp"

namespace comb::storage {
namespace {

// $1 is always the community and $2 the current time; filters add theirs after them. A banned
// author's events are kept (lifting the ban brings them back) but served to no one, as what they
// publish is refused and what they published before is what moderators banned them for.
// NOT IN, not NOT EXISTS: Postgres reads the bans once into a hash (a hashed SubPlan) where NOT
// EXISTS joined them per row, a third of a 100-row `#e` read's time (pgbench).
constexpr const char* scope_condition =
  "e.community_id = $1::bigint AND (e.expires_at IS NULL OR e.expires_at > $2::bigint)"
  " AND e.pubkey NOT IN (SELECT b.pubkey FROM banned_pubkeys b WHERE b.community_id = $1::bigint)";
constexpr const char* newest_first = " ORDER BY e.created_at DESC, e.id";

std::string text_list(const std::vector<std::string>& values) {
  pg_array array;
  for (const auto& value : values)
    array.add_text(value);
  return array.str();
}

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

  /// Leaves out of every filter's rows what `hiding` hides of the rooms (hidden_rooms_sql), and
  /// of the comments and reports those borrowing a room whose regular events it hides
  /// (borrowed_rooms_sql).
  void hide(const protocol::room_hiding& hiding) {
    hiding_ = hiding;
    hidden_borrowed_rooms_ = hiding.regular_hidden();
  }

  [[nodiscard]] const protocol::room_hiding& hiding() const noexcept { return hiding_; }

  /// The placeholder of the rooms whose comments and reports are hidden, added when first asked for (a
  /// parameter no statement names has no type); empty when none are hidden.
  [[nodiscard]] std::string hidden_borrowed_rooms() {
    if (borrowed_rooms_placeholder_.empty() && !hidden_borrowed_rooms_.empty())
      borrowed_rooms_placeholder_ = add(text_list(hidden_borrowed_rooms_), "text[]");
    return borrowed_rooms_placeholder_;
  }

  /// The placeholder of every room the hiding lists (room_hiding::listed), added when first
  /// asked for.
  [[nodiscard]] std::string listed_rooms() {
    if (listed_rooms_placeholder_.empty())
      listed_rooms_placeholder_ = add(text_list(hiding_.listed()), "text[]");
    return listed_rooms_placeholder_;
  }

  /// hidden_rooms_sql of the hiding, built when first asked for and shared by every filter;
  /// empty when it hides nothing.
  [[nodiscard]] std::string hidden_rooms_condition();

private:
  pg_params params_;
  protocol::room_hiding hiding_;
  std::vector<std::string> hidden_borrowed_rooms_;
  std::string borrowed_rooms_placeholder_;
  std::string listed_rooms_placeholder_;
  std::string hidden_rooms_condition_;
};

/// The room `value` names is one the hiding does not list (room_hiding::unknown_hidden), and
/// not the general room; empty when the hiding does not hide such rooms.
std::string unknown_room_sql(std::string_view value, param_list& params) {
  if (!params.hiding().unknown_hidden)
    return {};
  static_assert(protocol::general_room == "_");
  const std::string room(value);
  return '(' + room + " <> '_' AND NOT " + room + " = ANY(" + params.listed_rooms() + "))";
}

/// Leaves out the rows a reader may not see of the rooms (protocol::room_hiding). A row's room
/// is its `d` tag for room state (39000-39005), its `h` tag otherwise, as for a REQ; a row
/// with several `h` tags is left out when any of them names a room it may not see, unless it
/// is a 9000 or 9001 naming the reader in a `p` tag (protocol::shown_to_named). A room's
/// deletion (9008) shows whether this pod knows the room or not: it is how readers learn it went.
std::string hidden_rooms_sql(const protocol::room_hiding& hiding, param_list& params) {
  std::string unseen = params.add(text_list(hiding.unseen), "text[]");
  std::string state_only = params.add(text_list(hiding.state_only), "text[]");
  std::string codes = params.add(text_list(hiding.codes_hidden), "text[]");
  std::string unknown = unknown_room_sql("r.value", params);
  if (!unknown.empty())
    unknown = "(e.kind <> " + std::to_string(protocol::room_delete_kind) + " AND " + unknown + ')';
  // `name IN ('d', 'h')` lets Postgres read the row's room tags from event_tags_room.
  const std::string room_tags = "EXISTS (SELECT 1 FROM event_tags r WHERE r.community_id = e.community_id"
         " AND r.event_id = e.id AND r.name IN ('d', 'h') AND r.name = CASE WHEN e.kind BETWEEN 39000 AND 39005"
         " THEN 'd' ELSE 'h' END AND (";
  std::string hidden = room_tags + "r.value = ANY(" + unseen + ") OR (r.value = ANY(" + state_only
         + ") AND e.kind NOT IN (39000, 39001, 39002, 39003)) OR (r.value = ANY(" + codes
         + ") AND e.kind = 9009)" + (unknown.empty() ? "" : " OR " + unknown) + "))";
  if (hiding.reader.empty())
    return " AND NOT " + hidden;
  // The reader named in a room change sees it whatever its room hides, but a room this pod does
  // not know hides it still (connection::rooms_shown): asked only of the rare row that needs it.
  std::string reader = params.add(hiding.reader, "text");
  return " AND (NOT " + hidden + " OR (e.kind IN (9000, 9001) AND EXISTS (SELECT 1 FROM event_tags n"
         " WHERE n.community_id = e.community_id AND n.event_id = e.id AND n.name = 'p' AND n.value = "
         + reader + ")" + (unknown.empty() ? "" : " AND NOT " + room_tags + unknown + "))") + "))";
}

std::string param_list::hidden_rooms_condition() {
  if (hidden_rooms_condition_.empty() && !hiding_.empty())
    hidden_rooms_condition_ = hidden_rooms_sql(hiding_, *this);
  return hidden_rooms_condition_;
}

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

std::vector<std::string_view> indexable_values(const protocol::tag_condition& condition) {
  std::vector<std::string_view> out;
  for (const auto& value : condition.values)
    if (is_indexable_tag_value(value))
      out.push_back(value);
  return out;
}

std::string tag_condition_sql(const protocol::tag_condition& condition, param_list& params) {
  pg_array values;
  for (auto value : indexable_values(condition))
    values.add_text(std::string(value));
  std::string name = params.add(std::string(1, condition.name), "text");
  // The row's created_at completes event_tags_value's key: one probe per value (migration 21).
  return " AND EXISTS (SELECT 1 FROM event_tags t WHERE t.community_id = e.community_id"
         " AND t.event_id = e.id AND t.created_at = e.created_at AND t.name = "
         + name + " AND t.value = ANY(" + params.add(values.str(), "text[]") + "))";
}

// At most this many (author, kind) pairs are walked one index range each; more stay a list.
constexpr std::size_t max_index_ranges = 64;

/// Whether a filter's rows are read one index range per (author, kind) pair, or per kind when
/// it names no authors. Each range of (community, pubkey, kind, created_at) or (community, kind,
/// created_at) yields its rows newest first, so a LIMIT stops after that many rows; `= ANY` over
/// several values loses that order, and Postgres then reads and sorts every match instead.
bool reads_per_range(const protocol::filter& f) {
  if (f.ids || !f.kinds)
    return false; // ids are direct lookups; authors alone have no (pubkey, created_at) index
  std::size_t ranges = f.kinds->size() * (f.authors ? f.authors->size() : 1);
  return ranges > 1 && ranges <= max_index_ranges;
}

/// `column = value` for one value (so an index keeps its order), `= ANY(list)` otherwise.
std::string one_or_any(std::string_view column, const std::vector<protocol::bytes32>& values,
                       param_list& params) {
  if (values.size() == 1)
    return std::string(column) + " = " + params.add(bytea_param(values.front()), "bytea");
  return std::string(column) + " = ANY(" + params.add(bytea_list(values), "bytea[]") + ')';
}

std::string one_or_any(std::string_view column, const std::vector<std::uint32_t>& values,
                       param_list& params) {
  if (values.size() == 1)
    return std::string(column) + " = " + params.add(std::to_string(values.front()), "int");
  return std::string(column) + " = ANY(" + params.add(kind_list(values), "int[]") + ')';
}

/// Whether a filter's rows are read from its first tag condition's one value, newest first, in
/// (community, name, value, created_at): `#e` with one id (the replies to a note) reads its
/// LIMIT rows there instead of every tagged event. Rows are unique per (event, name, value).
/// One tag value beats kinds alone; named authors (or ids) are usually the narrower read.
bool reads_by_tag(const protocol::filter& f) {
  return !f.ids && !f.authors && !f.tags.empty() && indexable_values(f.tags.front()).size() == 1;
}

/// How where_sql states a filter's keys: as its own values, from per-pair ranges (`a.pubkey`,
/// `k.kind`), or with the first tag condition already met by the row's tag `t`.
enum class keys_from { filter, ranges, first_tag };

/// An event stored with borrowed rooms (protocol::may_carry_borrowed_rooms: a comment, a report,
/// the edit of a room's calendar event that left its `h` out) shows where the rooms it was stored
/// with (event_tags rows named storage::borrowed_room_tag) all show a regular event and, where
/// the hiding hides unknown rooms, are known: as the rooms a live one carries
/// (actors/connection/connection_rooms.cpp `connection::event_visible`).
std::string borrowed_rooms_sql(const protocol::filter& f, param_list& params) {
  if (!protocol::may_match_borrower(f))
    return {};
  std::string hiding_rooms;
  if (const std::string hidden = params.hidden_borrowed_rooms(); !hidden.empty())
    hiding_rooms = "c.value = ANY(" + hidden + ')';
  if (const std::string unknown = unknown_room_sql("c.value", params); !unknown.empty())
    hiding_rooms += (hiding_rooms.empty() ? "" : " OR ") + unknown;
  if (hiding_rooms.empty())
    return {};
  // protocol::may_carry_borrowed_rooms: the borrowers, and addressable kinds but room state.
  static const std::string may_carry = [] {
    std::string kinds;
    for (auto kind : protocol::borrower_kinds)
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(kind);
    return "(e.kind IN (" + kinds + ") OR (e.kind BETWEEN 30000 AND 39999 AND e.kind NOT BETWEEN "
           + std::to_string(protocol::room_metadata_kind) + " AND " + std::to_string(protocol::room_pins_kind)
           + "))";
  }();
  return " AND (NOT " + may_carry
         + " OR NOT EXISTS (SELECT 1 FROM event_tags c WHERE c.community_id = e.community_id"
           " AND c.event_id = e.id AND c.name = '" + std::string(borrowed_room_tag) + "' AND ("
         + hiding_rooms + ")))";
}

/// The WHERE conditions of one filter that can match (see can_match).
std::string where_sql(const protocol::filter& f, param_list& params,
                      keys_from keys = keys_from::filter) {
  bool per_range = keys == keys_from::ranges;
  std::string sql = scope_condition;
  if (f.ids)
    sql += " AND " + one_or_any("e.id", *f.ids, params);
  if (f.authors)
    sql += per_range ? " AND e.pubkey = a.pubkey" : " AND " + one_or_any("e.pubkey", *f.authors, params);
  if (f.kinds)
    sql += per_range ? " AND e.kind = k.kind" : " AND " + one_or_any("e.kind", *f.kinds, params);
  if (f.since)
    sql += " AND e.created_at >= " + params.add(std::to_string(*f.since), "bigint");
  if (f.until)
    sql += " AND e.created_at <= " + params.add(std::to_string(*f.until), "bigint");
  for (std::size_t i = keys == keys_from::first_tag ? 1 : 0; i < f.tags.size(); ++i)
    sql += tag_condition_sql(f.tags[i], params);
  static_assert(protocol::gift_wrap_kind == 1059 && protocol::ephemeral_gift_wrap_kind == 21059);
  if (f.gift_wraps_hidden) // protocol::is_gift_wrap_kind
    sql += " AND e.kind NOT IN (1059, 21059)";
  return sql + params.hidden_rooms_condition() + borrowed_rooms_sql(f, params);
}

/// The row sorts after `after` in the reply's order (`at` DESC, `id`): stated on the columns the
/// read is ordered by, with `at <= ` first so that the index range starts at the cursor.
std::string after_sql(std::string_view at, std::string_view id, const history_cursor& after,
                      param_list& params) {
  std::string when = params.add(std::to_string(after.created_at), "bigint");
  std::string last = params.add(after.id, "bytea");
  const std::string at_column(at);
  return at_column + " <= " + when + " AND (" + at_column + " < " + when + " OR " + std::string(id)
         + " > " + last + ')';
}

/// The rows of a read by tag that needs no event row (`tag_rows_only`), named `e` with the
/// columns where_sql reads of an event: each tag row carries its event's author, expiry, size
/// and row version (migration 49), all in event_tags_value, so on vacuumed pages the read is an
/// index-only scan of it. Postgres pulls the subquery up: its rows still leave the index in
/// (created_at DESC) order.
constexpr const char* tag_rows_as_events =
  "(SELECT t.community_id, t.event_id AS id, t.created_at, t.kind, t.pubkey, t.expires_at, t.size,"
  " t.version FROM event_tags t WHERE t.community_id = $1::bigint AND t.name = ";

/// The placeholders of a filter's first tag condition's name and one value (reads_by_tag).
std::pair<std::string, std::string> first_tag_params(const protocol::filter& f, param_list& params) {
  // One statement per placeholder: the operands of `+` are evaluated in no fixed order.
  const auto& tag = f.tags.front();
  std::string name = params.add(std::string(1, tag.name), "text");
  std::string value = params.add(std::string(indexable_values(tag).front()), "text");
  return {std::move(name), std::move(value)};
}

std::string tag_rows_named(const std::string& name, const std::string& value) {
  return std::string(tag_rows_as_events) + name + " AND t.value = " + value + ") AS e";
}

std::string tag_driven_select(const protocol::filter& f, std::uint32_t limit,
                              const std::string& columns, param_list& params,
                              const history_cursor* after, bool tag_rows_only) {
  auto [name, value] = first_tag_params(f, params);
  std::string where = where_sql(f, params, keys_from::first_tag);
  const std::string created_at = tag_rows_only ? "e.created_at" : "t.created_at";
  const std::string id = tag_rows_only ? "e.id" : "t.event_id";
  if (after)
    where += " AND " + after_sql(created_at, id, *after, params);
  std::string limit_param = params.add(std::to_string(limit), "bigint");
  const std::string order = " ORDER BY " + created_at + " DESC, " + id + " LIMIT " + limit_param;
  if (tag_rows_only)
    return "SELECT " + columns + " FROM " + tag_rows_named(name, value) + " WHERE " + where + order;
  return "SELECT " + columns
         + " FROM event_tags t JOIN events e ON e.community_id = t.community_id"
           " AND e.id = t.event_id WHERE t.community_id = $1::bigint AND t.name = "
         + name + " AND t.value = " + value + " AND " + where + order;
}

/// One filter's newest `limit` rows (after `after`, if any), newest first, as `columns` of `e`;
/// `versions`: `columns` names the row's version, `e.xmin`, and its size, and no other column
/// of the event row (a read by tag then reads tag rows only, whose version is `e.version`).
std::string filter_select(const protocol::filter& f, std::uint32_t limit,
                          const std::string& columns, param_list& params,
                          const history_cursor* after = nullptr, bool versions = false) {
  if (reads_by_tag(f))
    return tag_driven_select(f, limit, columns, params, after, versions);
  if (!reads_per_range(f)) {
    std::string sql = "SELECT " + columns + " FROM events e WHERE " + where_sql(f, params);
    if (after)
      sql += " AND " + after_sql("e.created_at", "e.id", *after, params);
    return sql + newest_first + " LIMIT " + params.add(std::to_string(limit), "bigint");
  }
  // DISTINCT: a repeated value would read its range, and return its rows, twice.
  std::string ranges;
  if (f.authors)
    ranges = "(SELECT DISTINCT unnest(" + params.add(bytea_list(*f.authors), "bytea[]")
             + ")) AS a(pubkey) CROSS JOIN ";
  ranges += "(SELECT DISTINCT unnest(" + params.add(kind_list(*f.kinds), "int[]") + ")) AS k(kind)";
  std::string where = where_sql(f, params, keys_from::ranges);
  if (after)
    where += " AND " + after_sql("e.created_at", "e.id", *after, params);
  std::string limit_param = params.add(std::to_string(limit), "bigint");
  // The ranged rows are named `e` again, so `columns` reads the same either way.
  return "SELECT " + columns + " FROM " + ranges
         + " CROSS JOIN LATERAL (SELECT e.id, e.created_at, e.raw" + std::string(versions ? ", e.xmin" : "")
         + " FROM events e WHERE " + where
         + newest_first + " LIMIT " + limit_param + ") AS e" + newest_first + " LIMIT " + limit_param;
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

namespace {

/// Several filters' limits scaled down together, each to at least one row, when they add up to
/// more than max_union_rows (a reply may hold fewer events than its filters ask for).
void union_limits(std::vector<std::pair<const protocol::filter*, std::uint32_t>>& wanted) {
  std::uint64_t total = 0;
  for (const auto& item : wanted)
    total += item.second;
  if (total <= max_union_rows)
    return;
  for (auto& item : wanted)
    item.second = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(1, std::uint64_t{item.second} * max_union_rows / total));
}

/// What history_select returns of each row.
enum class row_columns {
  raw,         ///< `raw`
  with_order,  ///< `raw, created_at, id`: the reply's order
  with_version ///< `raw, created_at, id, v`: and the row's version (`xmin`)
};

/// history_sql's statement, or its `page`, returning `columns` of each row. `rows_bound` is set
/// to the LIMIT that may have cut the rows (0: none could), after which more rows may follow.
std::optional<sql_statement> history_select(const std::vector<protocol::filter>& filters,
                                            std::uint32_t default_limit,
                                            row_columns columns,
                                            param_list& params,
                                            const history_page& page = {},
                                            std::uint32_t* rows_bound = nullptr) {
  std::vector<std::pair<const protocol::filter*, std::uint32_t>> wanted;
  for (const auto& f : filters) {
    std::uint32_t limit = protocol::effective_limit(f, default_limit);
    if (limit != 0 && can_match(f))
      wanted.emplace_back(&f, limit);
  }
  if (wanted.empty())
    return std::nullopt;
  const history_cursor* after = page.after ? &*page.after : nullptr;
  const bool versions = columns == row_columns::with_version;
  const std::string version_column = versions ? ", e.xmin AS v" : "";
  // A keyed read sends no JSON: its rows' sizes bound its pages (bounded_select).
  const std::string body = versions ? "octet_length(e.raw) AS size" : "e.raw";
  if (wanted.size() == 1) {
    // One filter: the rows sent so far were its own, so they count against its limit.
    std::uint32_t limit = wanted[0].second;
    if (after && after->sent >= limit)
      return std::nullopt;
    limit -= after ? after->sent : 0;
    if (page.max_rows > 0)
      limit = std::min(limit, page.max_rows);
    if (rows_bound)
      *rows_bound = limit;
    // A tag-driven read joins two tables: planning it for each REQ cost more than running it
    // (about 3 ms against 1 ms for 100 rows), and its plan is the read of its one tag value.
    const bool by_tag = reads_by_tag(*wanted[0].first);
    // A tag-driven read is ordered by its tag row's copy of the keys (t.created_at, t.event_id,
    // both in event_tags_value): named from `t` (or from the tag rows' subquery `e`, which
    // Postgres pulls up into `t`), the order columns tell Postgres that the rows leave the read
    // already sorted, so the running total of bounded_history_sql sorts nothing.
    const std::string selected = columns == row_columns::raw ? "e.raw"
                                 : by_tag && versions ? "e.size, e.created_at, e.id, e.version AS v"
                                 : by_tag ? "e.raw, t.created_at, t.event_id AS id"
                                          : body + ", e.created_at, e.id" + version_column;
    return sql_statement{filter_select(*wanted[0].first, limit, selected, params, after, versions),
                         {}, by_tag};
  }
  // Each filter keeps its own order and limit; the union removes events several filters found.
  // A later page reads the union again and goes on after the cursor: which of its rows each
  // filter gave is not known, so no filter's limit can be reduced. Every page thus reads the
  // whole union: its limits together are bounded (union_limits), else one small REQ of many
  // filters would have Postgres read up to filters x max_limit rows for every page.
  union_limits(wanted);
  std::vector<std::string> selects;
  for (const auto& [f, limit] : wanted)
    selects.push_back(filter_select(*f, limit, "e.id, e.created_at", params));
  std::string sql = "SELECT " + body
                    + (columns != row_columns::raw ? ", m.created_at, m.id" + version_column : "")
                    + " FROM (" + union_of(selects)
                    + ") AS m JOIN events e ON e.community_id = $1::bigint AND e.id = m.id";
  if (after)
    sql += " WHERE " + after_sql("m.created_at", "m.id", *after, params);
  sql += " ORDER BY m.created_at DESC, m.id";
  if (page.max_rows > 0)
    sql += " LIMIT " + params.add(std::to_string(page.max_rows), "bigint");
  if (rows_bound)
    *rows_bound = page.max_rows;
  return sql_statement{std::move(sql), {}, false};
}

/// history_select's `page` of rows within `max_bytes` (see bounded_history_sql): `upto` is
/// the running total of `raw`'s bytes, `n` the row's place; a row the reply may go on after
/// (it reaches the bound, or it is the LIMIT's last) carries its place: rendering every row's id
/// as text cost more than the whole page's cursor.
std::optional<sql_statement> bounded_select(std::int64_t community_id,
                                            const std::vector<protocol::filter>& filters,
                                            std::int64_t now, std::uint32_t default_limit,
                                            std::size_t max_bytes, const history_page& page,
                                            bool keys_only, const protocol::room_hiding& hiding) {
  param_list params(community_id, now);
  params.hide(hiding);
  std::uint32_t rows_bound = 0;
  auto inner = history_select(filters, default_limit,
                              keys_only ? row_columns::with_version : row_columns::with_order,
                              params, page, &rows_bound);
  if (!inner)
    return std::nullopt;
  // The running total in the reply's own order (the inner statement's, so nothing is sorted
  // again): a row is returned while the rows before it hold less than max_bytes.
  std::string bound = params.add(std::to_string(max_bytes), "bigint");
  std::string last_row = params.add(std::to_string(rows_bound), "bigint");
  std::string goes_on = "upto >= " + bound + " OR n = " + last_row;
  // Read in the rows' own snapshot (an init plan, once per statement): the reader's pod holds
  // back rows read past the community state it has (actors/connection/query_replies.cpp).
  const std::string read_at = ", " + std::string(state_version_read);
  const std::string window = " OVER w AS upto, row_number() OVER w AS n FROM (" + inner->text
                             + ") AS h WINDOW w AS (ORDER BY created_at DESC, id ROWS UNBOUNDED"
                               " PRECEDING)) AS w";
  if (keys_only)
    inner->text = "SELECT id, v, CASE WHEN " + goes_on + " THEN upto END, CASE WHEN " + goes_on
                  + " THEN created_at END" + read_at + " FROM (SELECT"
                  " created_at, id, v, size, sum(size)" + window
                  + " WHERE upto - size < " + bound + " ORDER BY created_at DESC, id";
  else
    inner->text = "SELECT raw, upto, CASE WHEN " + goes_on + " THEN created_at END, CASE WHEN "
                  + goes_on + " THEN id END" + read_at + " FROM (SELECT raw, created_at, id, sum(octet_length(raw))"
                  + window + " WHERE upto - octet_length(raw) < " + bound
                  + " ORDER BY created_at DESC, id";
  inner->params = params.take();
  inner->binary_rows = true; // ids as 32 bytes and numbers as words: nothing in hex or decimal
  return inner;
}

} // namespace

std::optional<sql_statement> history_sql(std::int64_t community_id,
                                         const std::vector<protocol::filter>& filters,
                                         std::int64_t now,
                                         std::uint32_t default_limit) {
  param_list params(community_id, now);
  auto statement = history_select(filters, default_limit, row_columns::raw, params);
  if (statement)
    statement->params = params.take();
  return statement;
}

std::optional<sql_statement> bounded_history_sql(std::int64_t community_id,
                                                 const std::vector<protocol::filter>& filters,
                                                 std::int64_t now,
                                                 std::uint32_t default_limit,
                                                 std::size_t max_bytes,
                                                 const history_page& page,
                                                 const protocol::room_hiding& hiding) {
  return bounded_select(community_id, filters, now, default_limit, max_bytes, page, false, hiding);
}

std::optional<sql_statement> bounded_history_keys_sql(std::int64_t community_id,
                                                      const std::vector<protocol::filter>& filters,
                                                      std::int64_t now,
                                                      std::uint32_t default_limit,
                                                      std::size_t max_bytes,
                                                      const history_page& page,
                                                      const protocol::room_hiding& hiding) {
  return bounded_select(community_id, filters, now, default_limit, max_bytes, page, true, hiding);
}

std::optional<sql_statement> event_bodies_sql(std::int64_t community_id,
                                              const std::vector<protocol::bytes32>& ids) {
  if (ids.empty())
    return std::nullopt;
  // No time or visibility condition: the ids were chosen by a keyed read a moment ago, and a
  // row deleted since is simply not found.
  pg_binary_array wanted(pg_binary_array::element::bytea);
  for (const auto& id : ids)
    wanted.add_bytes(id);
  return sql_statement{"SELECT id, xmin, raw FROM events WHERE community_id = $1::bigint"
                       " AND id = ANY($2::bytea[])",
                       {std::to_string(community_id), wanted.str()}, true, {false, true}, true};
}

namespace {

/// One filter's matching ids for count_sql. A filter read by one tag value counts its tag rows,
/// which carry what the conditions read of their event (migration 49): no event row is read.
std::string count_select(const protocol::filter& f, param_list& params) {
  if (!reads_by_tag(f))
    return "SELECT e.id FROM events e WHERE " + where_sql(f, params);
  auto [name, value] = first_tag_params(f, params);
  return "SELECT e.id FROM " + tag_rows_named(name, value) + " WHERE " + where_sql(f, params, keys_from::first_tag);
}

} // namespace

std::optional<sql_statement> count_sql(std::int64_t community_id,
                                       const std::vector<protocol::filter>& filters,
                                       std::int64_t now,
                                       const protocol::room_hiding& hiding,
                                       std::uint64_t counted_at_most) {
  param_list params(community_id, now);
  params.hide(hiding);
  std::vector<std::string> selects;
  for (const auto& f : filters)
    if (can_match(f))
      selects.push_back(count_select(f, params));
  if (selects.empty())
    return std::nullopt;
  const std::string version(state_version_read);
  if (selects.size() == 1) {
    std::string cap = params.add(std::to_string(counted_at_most + 1), "bigint");
    return sql_statement{"SELECT count(*), " + version + ", false FROM (" + selects.front() + " LIMIT "
                           + cap + ") AS m",
                         params.take(), false};
  }
  // Several filters share the bound, each its part of it: Postgres removes duplicates by
  // hashing or sorting, which reads every row of its input before an outer LIMIT could stop
  // it, so twenty branches cut at the whole bound each read twenty times what one REQ may.
  // A branch that reads past its part (one row more) makes the answer approximate.
  const auto share = std::max<std::uint64_t>(1, (counted_at_most + selects.size()) / selects.size());
  std::string cap = params.add(std::to_string(share + 1), "bigint");
  std::string rows;
  for (std::size_t i = 0; i < selects.size(); ++i)
    rows += (i ? " UNION ALL " : "") + ("(SELECT id, " + std::to_string(i) + " AS branch FROM ("
                                         + selects[i] + " LIMIT " + cap + ") AS b)");
  return sql_statement{"WITH m AS (" + rows + ") SELECT (SELECT count(DISTINCT id) FROM m), " + version
                         + ", EXISTS (SELECT 1 FROM m GROUP BY branch HAVING count(*) >= " + cap + ")",
                       params.take(), false};
}

} // namespace comb::storage
