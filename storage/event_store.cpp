// SPDX-License-Identifier: MIT
#include "storage/event_store.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>

#include "protocol/hex.hpp"
#include "protocol/nip62.hpp"
#include "storage/batch_sql.hpp"
#include "storage/event_body_cache.hpp"
#include "storage/filter_sql.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/store_plan.hpp"
#include "storage/vanish_reach.hpp"

namespace comb::storage {
namespace {

constexpr const char* read_failed = "error: could not read events, please retry";

/// One try at storing a batch in one transaction.
struct batch_attempt {
  std::vector<store_outcome> outcomes; ///< set when committed, or planned when its COMMIT failed
  std::optional<pg_reply> failure;
  bool commit_sent = false; ///< a failed COMMIT leaves the outcome unknown: never replay it
  std::uint32_t transaction = 0; ///< the inserted rows' version (xmin); 0 until read
};

std::vector<store_outcome> all_failed(std::size_t count) {
  return std::vector<store_outcome>(count,
                                    store_outcome{store_outcome::status::failed, msg_failed});
}

/// Opens the transaction, locks, reads, plans and writes; the caller commits or rolls back.
/// `transaction`: set to the transaction's id, the version of the rows it inserts.
std::optional<pg_reply> plan_and_write(pg_connection& connection,
                                       std::span<const event_write> writes,
                                       std::vector<store_outcome>& outcomes,
                                       std::uint32_t& transaction) {
  const batch_keys keys = keys_of(writes);
  auto snapshot = begin_with_snapshot(connection, locks_for(keys), keys);
  if (auto* failed = std::get_if<pg_reply>(&snapshot))
    return std::move(*failed);
  auto& read = std::get<batch_snapshot>(snapshot);
  transaction = read.transaction;
  if (auto failed = read_room_posters(connection, room_posters_to_read(writes, read), read))
    return failed;
  store_plan plan = plan_batch(writes, read);
  if (auto failed = write_plan(connection, writes, plan, read.transaction))
    return failed;
  outcomes = std::move(plan.outcomes);
  return std::nullopt;
}

/// Read after the commit, not inside the transaction: a read there could miss a removal that
/// commits between it and the COMMIT, and locking the community row instead would deadlock
/// against bans and room deletions, which take that row before the community's advisory lock.
constexpr const char* versions_after_commit_sql =
  "SELECT id, state_version FROM communities WHERE id = ANY($1::bigint[])";

/// Sets each stored outcome's state_version from `reply` (rows of versions_after_commit_sql).
void note_versions(const pg_reply& reply, std::span<const event_write> writes,
                   std::vector<store_outcome>& outcomes) {
  std::unordered_map<std::int64_t, std::int64_t> version_of;
  for (int row = 0; row < reply.rows(); ++row)
    version_of[reply.integer(row, 0)] = reply.integer(row, 1);
  for (std::size_t i = 0; i < outcomes.size() && i < writes.size(); ++i)
    if (auto it = version_of.find(writes[i].community_id);
        it != version_of.end() && outcomes[i].result == store_outcome::status::stored)
      outcomes[i].state_version = it->second;
}

/// Commits, reading in the same round trip the state version of every community the batch
/// stored an event in (store_outcome::state_version). The COMMIT's reply. A failed read of the
/// versions is tried once more on its own; failed again, every stored event is marked
/// unknown_state_version: no pod can confirm who may read it, so each holds it until the hold
/// drops it and a gap fill brings it back from Postgres with its version.
pg_reply commit_reading_versions(pg_connection& connection, std::span<const event_write> writes,
                                 std::vector<store_outcome>& outcomes) {
  pg_array ids;
  std::vector<std::int64_t> communities;
  for (std::size_t i = 0; i < outcomes.size() && i < writes.size(); ++i)
    if (outcomes[i].result == store_outcome::status::stored
        && std::find(communities.begin(), communities.end(), writes[i].community_id) == communities.end()) {
      communities.push_back(writes[i].community_id);
      ids.add_integer(writes[i].community_id);
    }
  if (communities.empty())
    return connection.exec("COMMIT");
  const pg_params params{ids.str()};
  auto replies = connection.exec_pipeline({{"COMMIT", nullptr, {}}, {versions_after_commit_sql, &params, {}}}, true);
  if (!replies.front().ok())
    return std::move(replies.front());
  if (!replies.back().ok())
    replies.back() = connection.exec(versions_after_commit_sql, params);
  if (replies.back().ok())
    note_versions(replies.back(), writes, outcomes);
  else
    for (auto& outcome : outcomes)
      if (outcome.result == store_outcome::status::stored)
        outcome.state_version = unknown_state_version;
  return std::move(replies.front());
}

batch_attempt attempt_batch(pg_connection& connection, std::span<const event_write> writes) {
  batch_attempt attempt;
  std::vector<store_outcome> outcomes;
  if (auto failed = plan_and_write(connection, writes, outcomes, attempt.transaction)) {
    // Its own failure changes nothing: the batch is lost (and without a transaction, a no-op).
    (void)connection.exec("ROLLBACK");
    attempt.failure = std::move(failed);
    return attempt;
  }
  attempt.commit_sent = true;
  if (auto commit = commit_reading_versions(connection, writes, outcomes); !commit.ok()) {
    attempt.failure = std::move(commit);
    attempt.outcomes = std::move(outcomes); // what it would have done, for settle_in_doubt
    return attempt;
  }
  attempt.outcomes = std::move(outcomes);
  return attempt;
}

/// A batch whose COMMIT was sent and failed. When the connection was lost, the COMMIT may have
/// taken effect (the server can commit and die before answering): the events it planned to
/// store are looked up (the next statement reconnects), each on its own, since another writer
/// may have stored one of them meanwhile. One there is stored, by this batch or that writer,
/// with no state version known (the bridge holds such events for a gap fill); one not there,
/// or any when the look-up fails, failed. A planned deletion or vanish is answered failed (its
/// retry applies it again, or finds it done); refusals and duplicates stand. Without this, a
/// stored event was answered OK false and never went out live, nor did its retry (duplicate).
std::vector<store_outcome> settle_in_doubt(pg_connection& connection, std::span<const event_write> writes,
                                           batch_attempt& attempt) {
  if (!attempt.failure->connection_lost() || attempt.outcomes.size() != writes.size())
    return all_failed(writes.size());
  // Ends, for the connection, the transaction that died with it: the look-up then reconnects.
  (void)connection.exec("ROLLBACK");
  pg_array communities, ids;
  for (std::size_t i = 0; i < writes.size(); ++i)
    if (attempt.outcomes[i].result == store_outcome::status::stored) {
      communities.add_integer(writes[i].community_id);
      ids.add_bytea(writes[i].ev->id);
    }
  auto found = connection.exec("SELECT encode(e.id, 'hex'), e.community_id FROM events e"
                               " JOIN unnest($1::bigint[], $2::bytea[]) AS k(c, i)"
                               " ON e.community_id = k.c AND e.id = k.i",
                               {communities.str(), ids.str()});
  if (!found.ok())
    return all_failed(writes.size());
  std::set<std::pair<std::string, std::int64_t>> there;
  for (int row = 0; row < found.rows(); ++row)
    there.emplace(std::string(found.text(row, 0)), found.integer(row, 1));
  const store_outcome failed{store_outcome::status::failed, msg_failed};
  for (std::size_t i = 0; i < writes.size(); ++i) {
    auto& outcome = attempt.outcomes[i];
    if (outcome.result == store_outcome::status::applied)
      outcome = failed;
    else if (outcome.result == store_outcome::status::stored) {
      if (there.contains({protocol::to_hex(writes[i].ev->id), writes[i].community_id}))
        outcome.state_version = unknown_state_version;
      else
        outcome = failed;
    }
  }
  return std::move(attempt.outcomes);
}

/// Holds the JSON of each event the committed `attempt` stored in `bodies` (if any) under the
/// rows' version, so that readers need not ask the database for it.
void remember_stored(event_body_cache* bodies, std::span<const event_write> writes,
                     const batch_attempt& attempt) {
  if (!bodies || attempt.failure || attempt.transaction == 0)
    return;
  for (std::size_t i = 0; i < writes.size() && i < attempt.outcomes.size(); ++i)
    if (attempt.outcomes[i].result == store_outcome::status::stored && writes[i].json && writes[i].ev)
      bodies->remember(body_key{writes[i].community_id, writes[i].ev->id, attempt.transaction},
                       writes[i].json);
}

/// Another writer (a second writer of this pod, another pod) inserted one of the batch's ids
/// after the batch read its snapshot: the events insert met the primary key (unique_violation).
bool lost_insert_race(const pg_reply& failure) {
  return failure.sqlstate() == "23505";
}

/// The batch waited lock_timeout for a row another transaction holds (a psql session left open
/// on a community, a community being deleted).
bool lock_timed_out(const pg_reply& failure) {
  return failure.sqlstate() == "55P03";
}

/// A read-only statement, sent again once on a fresh connection if the first one was lost
/// (a restarted server, a terminated backend): reading twice is harmless.
pg_reply read_with_retry(pg_connection& connection, const sql_statement& statement) {
  const pg_formats formats{statement.fixed_plan, statement.binary_params, statement.binary_rows};
  auto reply = connection.exec_with(statement.text, statement.params, formats);
  if (!reply.ok() && reply.connection_lost())
    reply = connection.exec_with(statement.text, statement.params, formats);
  return reply;
}

/// Rows a page reads at most: as many as `bytes` holds at `row_bytes` each, one more so that
/// the byte bound rather than this one usually ends the page. Postgres reads every row up to
/// this bound (the running total cannot stop it early), so it is kept near what a page sends.
std::uint32_t rows_for(std::size_t bytes, std::size_t row_bytes) {
  constexpr std::size_t fewest = 16;
  constexpr std::size_t most = 4096;
  return static_cast<std::uint32_t>(std::clamp(bytes / std::max<std::size_t>(row_bytes, 1) + 2,
                                               fewest, most));
}

/// Events as small as a reaction fill the first page; larger ones end it by bytes.
constexpr std::size_t first_page_row_bytes = 256;

/// Where a page's statement puts the columns the next page needs.
struct page_columns {
  int upto = 1;
  int created_at = 2; ///< NULL except on a row the reply may go on after
  int id = 3;
  int state_version = 4;
};
constexpr page_columns body_rows{1, 2, 3, 4}; ///< bounded_history_sql
constexpr page_columns key_rows{2, 3, 0, 4};  ///< bounded_history_keys_sql

/// The community's state version a page was read at; 0 for a page without rows.
std::int64_t read_at(const pg_reply& rows, page_columns columns) {
  return rows.rows() == 0 ? 0 : rows.binary_integer(0, columns.state_version);
}

/// An id as a bytea field of a binary-format row holds it: its 32 bytes.
std::optional<protocol::bytes32> id_of_field(std::string_view bytes) {
  if (bytes.size() != sizeof(protocol::bytes32))
    return std::nullopt;
  protocol::bytes32 id;
  std::memcpy(id.data(), bytes.data(), id.size());
  return id;
}

/// The page after `page`, whose `rows` (binary format) were read; nothing when the reply may
/// not go on after them (bounded_history_sql names a row's place only then).
std::optional<history_page> next_page(const history_page& page, const pg_reply& rows,
                                      std::size_t max_bytes, page_columns columns) {
  const int count = rows.rows();
  if (count == 0 || rows.is_null(count - 1, columns.created_at))
    return std::nullopt;
  auto id = id_of_field(rows.text(count - 1, columns.id));
  if (!id)
    return std::nullopt;
  const auto upto = static_cast<std::uint64_t>(rows.binary_integer(count - 1, columns.upto));
  history_cursor after{rows.binary_integer(count - 1, columns.created_at),
                       "\\x" + protocol::to_hex(*id),
                       (page.after ? page.after->sent : 0) + static_cast<std::uint32_t>(count)};
  return history_page{std::move(after), rows_for(max_bytes, upto / static_cast<std::uint64_t>(count))};
}

/// The row version (`xmin`, an xid: four bytes) of a binary-format row.
std::uint32_t version_of_field(const pg_reply& rows, int row, int column) {
  return static_cast<std::uint32_t>(rows.binary_integer(row, column));
}

/// The bodies of a keyed page's rows (bounded_history_keys_sql), in its order: shared from
/// `bodies` where it holds the row's version, the others fetched in one statement and
/// remembered. A row deleted between the two statements has none (it is left out, as a read
/// a moment later would leave it out); nothing when the fetch failed.
std::optional<std::vector<shared_body>> bodies_of(pg_connection& connection,
                                                  event_body_cache& bodies,
                                                  std::int64_t community_id, const pg_reply& rows) {
  const auto count = static_cast<std::size_t>(rows.rows());
  std::vector<body_key> keys(count);
  for (std::size_t row = 0; row < count; ++row) {
    auto id = id_of_field(rows.text(static_cast<int>(row), 0));
    if (!id)
      return std::nullopt;
    keys[row] = body_key{community_id, *id, version_of_field(rows, static_cast<int>(row), 1)};
  }
  std::vector<shared_body> found(count);
  bodies.share_all(keys, found);
  std::vector<protocol::bytes32> missing;
  std::unordered_map<protocol::bytes32, std::size_t, protocol::bytes32_hash> missing_at;
  for (std::size_t row = 0; row < count; ++row) {
    if (found[row])
      continue;
    missing.push_back(keys[row].id);
    missing_at.emplace(keys[row].id, row);
  }
  auto statement = event_bodies_sql(community_id, missing);
  if (!statement)
    return found;
  auto fetched = read_with_retry(connection, *statement);
  if (!fetched.ok())
    return std::nullopt;
  for (int row = 0; row < fetched.rows(); ++row) {
    auto id = id_of_field(fetched.text(row, 0));
    if (!id)
      return std::nullopt;
    auto body = std::make_shared<const std::string>(fetched.text(row, 2));
    bodies.remember(body_key{community_id, *id, version_of_field(fetched, row, 1)}, body);
    if (auto at = missing_at.find(*id); at != missing_at.end())
      found[at->second] = std::move(body);
  }
  return found;
}

} // namespace

event_store::event_store(pg_connection& connection, event_body_cache* bodies)
  : connection_(connection), bodies_(bodies) {}

std::vector<store_outcome> event_store::store_batch(std::span<const event_write> writes) {
  try {
    // NIP-62 beyond a request's own community first, so that its OK says all of it is done. A
    // request that could not be carried out everywhere fails (the client sends it again; what
    // was done is done) and leaves the batch, whose other writes go on without it.
    std::vector<std::optional<std::size_t>> elsewhere(writes.size(), std::size_t{0});
    bool all_reached = true;
    for (std::size_t i = 0; i < writes.size(); ++i)
      if (writes[i].vanish_elsewhere && writes[i].ev->kind == protocol::vanish_kind) {
        elsewhere[i] = vanish_elsewhere(writes[i]);
        all_reached = all_reached && elsewhere[i];
      }
    std::vector<event_write> reached;
    if (!all_reached)
      for (std::size_t i = 0; i < writes.size(); ++i)
        if (elsewhere[i])
          reached.push_back(writes[i]);
    auto stored = store_together(all_reached ? writes : std::span<const event_write>(reached));
    std::vector<store_outcome> outcomes;
    outcomes.reserve(writes.size());
    for (std::size_t i = 0, next = 0; i < writes.size(); ++i) {
      outcomes.push_back(elsewhere[i] ? std::move(stored[next++]) : all_failed(1).front());
      if (elsewhere[i] && outcomes.back().result == store_outcome::status::applied)
        outcomes.back().vanished_elsewhere = *elsewhere[i];
    }
    return outcomes;
  } catch (const std::exception&) {
    return all_failed(writes.size());
  }
}

std::optional<std::size_t> event_store::vanish_elsewhere(const event_write& request) {
  auto communities = communities_vanish_reaches(connection_, request);
  if (!communities)
    return std::nullopt;
  std::size_t took = 0;
  for (std::size_t first = 0; first < communities->size(); first += vanish_communities_per_transaction) {
    std::vector<event_write> copies;
    for (std::size_t i = first; i < std::min(communities->size(), first + vanish_communities_per_transaction); ++i) {
      copies.push_back(request);
      copies.back().community_id = (*communities)[i];
      copies.back().vanish_elsewhere = false;
    }
    for (const auto& outcome : store_together(copies))
      if (outcome.result != store_outcome::status::applied)
        return std::nullopt;
    took += copies.size();
  }
  return took;
}

std::vector<store_outcome> event_store::store_per_community(std::span<const event_write> writes) {
  std::map<std::int64_t, std::vector<std::size_t>> by_community;
  for (std::size_t i = 0; i < writes.size(); ++i)
    by_community[writes[i].community_id].push_back(i);
  // One community's lock is waited for once more, not once per event of it, and the other
  // communities' events of the batch are stored without it.
  if (by_community.size() == 1)
    return all_failed(writes.size());
  std::vector<store_outcome> outcomes(writes.size());
  for (const auto& [community, places] : by_community) {
    std::vector<event_write> part;
    part.reserve(places.size());
    for (auto place : places)
      part.push_back(writes[place]);
    auto stored = store_together(part);
    for (std::size_t k = 0; k < places.size(); ++k)
      outcomes[places[k]] = std::move(stored[k]);
  }
  return outcomes;
}

std::vector<store_outcome> event_store::store_together(std::span<const event_write> writes) {
  try {
    if (writes.empty())
      return {};
    // Each attempt that commits leaves its stored bodies with the readers' cache.
    auto attempt = [this](std::span<const event_write> some) {
      batch_attempt made = attempt_batch(connection_, some);
      remember_stored(bodies_, some, made);
      return made;
    };
    batch_attempt first = attempt(writes);
    if (!first.failure)
      return std::move(first.outcomes);
    if (first.commit_sent)
      return settle_in_doubt(connection_, writes, first);
    if (first.failure->connection_lost()) {
      // Nothing was committed; the next statement reconnects, so replaying is safe.
      batch_attempt again = attempt(writes);
      if (!again.failure)
        return std::move(again.outcomes);
      return again.commit_sent ? settle_in_doubt(connection_, writes, again) : all_failed(writes.size());
    }
    if (lost_insert_race(*first.failure)) {
      // The other writer has committed by now (Postgres raised the error only then): replayed,
      // the batch reads those ids as stored and answers them as duplicates.
      batch_attempt again = attempt(writes);
      if (!again.failure)
        return std::move(again.outcomes);
      if (again.commit_sent)
        return settle_in_doubt(connection_, writes, again);
      if (lock_timed_out(*again.failure))
        return store_per_community(writes);
    }
    if (writes.size() == 1)
      return all_failed(1);
    if (lock_timed_out(*first.failure))
      return store_per_community(writes);
    // One bad write must not fail its neighbours: store each on its own.
    std::vector<store_outcome> outcomes;
    for (std::size_t i = 0; i < writes.size(); ++i) {
      batch_attempt single = attempt(writes.subspan(i, 1));
      if (single.failure)
        outcomes.push_back(single.commit_sent ? settle_in_doubt(connection_, writes.subspan(i, 1), single).front()
                                              : all_failed(1).front());
      else
        outcomes.push_back(single.outcomes.front());
    }
    return outcomes;
  } catch (const std::exception&) {
    // bad_alloc and the like: report every write as failed rather than let it escape.
    return all_failed(writes.size());
  }
}

query_result event_store::query(std::int64_t community_id,
                                const std::vector<protocol::filter>& filters,
                                std::int64_t now,
                                std::uint32_t default_limit) {
  std::vector<std::string> events;
  auto gather = [&events](query_result chunk) {
    std::move(chunk.events.begin(), chunk.events.end(), std::back_inserter(events));
    return true;
  };
  auto rest = query_chunks(community_id, filters, now, default_limit, 1024 * 1024, gather);
  if (!rest.ok)
    return rest;
  std::move(rest.events.begin(), rest.events.end(), std::back_inserter(events));
  rest.events = std::move(events);
  return rest;
}

query_result event_store::query_chunks(std::int64_t community_id,
                                       const std::vector<protocol::filter>& filters,
                                       std::int64_t now,
                                       std::uint32_t default_limit,
                                       std::size_t chunk_bytes,
                                       const chunk_handler& on_chunk,
                                       bool share,
                                       const protocol::room_hiding& hiding) {
  try {
    const query_result empty_chunk{true, {}, {}, false};
    query_result chunk = empty_chunk;
    std::size_t bytes = 0;
    std::int64_t read_at_version = 0; // of every page read so far: a chunk may span two
    // Counts an event taken into the chunk; hands the chunk on once it holds chunk_bytes.
    auto counted = [&](std::size_t size) {
      bytes += size;
      if (bytes < chunk_bytes)
        return true;
      bytes = 0;
      chunk.state_version = read_at_version;
      return on_chunk(std::exchange(chunk, empty_chunk));
    };
    auto take = [&](shared_body body) {
      const std::size_t size = body->size();
      if (share)
        chunk.shared.push_back(std::move(body));
      else
        chunk.events.emplace_back(*body);
      return counted(size);
    };
    // A row's JSON read here: shared only when the caller shares, else copied once as text.
    auto take_row = [&](std::string_view json) {
      if (share)
        return take(std::make_shared<const std::string>(json));
      chunk.events.emplace_back(json);
      return counted(json.size());
    };
    const query_result abandoned{false, {}, "error: history reply abandoned"};
    // Page by page, each page in one result and one statement, each going on after the last
    // row sent: libpq's single-row mode would build, copy and free a result for every row
    // (about 1,700 instructions), and no row is read twice.
    std::optional<history_page> page =
      history_page{std::nullopt, rows_for(chunk_bytes, first_page_row_bytes)};
    while (page) {
      auto statement = bodies_ ? bounded_history_keys_sql(community_id, filters, now, default_limit,
                                                          chunk_bytes, *page, hiding)
                               : bounded_history_sql(community_id, filters, now, default_limit,
                                                     chunk_bytes, *page, hiding);
      if (!statement)
        break; // no filter can match, or the one filter's limit is used up
      auto reply = read_with_retry(connection_, *statement);
      if (!reply.ok())
        return query_result{false, {}, read_failed};
      const auto columns = bodies_ ? key_rows : body_rows;
      read_at_version = std::max(read_at_version, read_at(reply, columns));
      if (bodies_) {
        auto found = bodies_of(connection_, *bodies_, community_id, reply);
        if (!found)
          return query_result{false, {}, read_failed};
        for (auto& body : *found)
          if (body && !take(std::move(body)))
            return abandoned;
      } else {
        for (int row = 0; row < reply.rows(); ++row)
          if (!take_row(reply.text(row, 0)))
            return abandoned;
      }
      page = next_page(*page, reply, chunk_bytes, columns);
    }
    chunk.last = true;
    chunk.state_version = read_at_version;
    return chunk;
  } catch (const std::exception&) {
    return query_result{false, {}, read_failed};
  }
}

count_result event_store::count(std::int64_t community_id,
                                const std::vector<protocol::filter>& filters,
                                std::int64_t now,
                                const protocol::room_hiding& hiding) {
  try {
    auto statement = count_sql(community_id, filters, now, hiding);
    if (!statement)
      return count_result{true, 0, {}};
    auto reply = read_with_retry(connection_, *statement);
    if (!reply.ok() || reply.rows() != 1)
      return count_result{false, 0, read_failed};
    auto counted = std::min(static_cast<std::uint64_t>(reply.integer(0, 0)), max_counted_events + 1);
    const bool approximate = counted > max_counted_events || reply.text(0, 2) == "t";
    return count_result{true, std::min(counted, max_counted_events), {}, approximate, reply.integer(0, 1)};
  } catch (const std::exception&) {
    return count_result{false, 0, read_failed};
  }
}

std::uint64_t event_store::purge_expired_chunk(std::int64_t now) {
  try {
    auto reply = connection_.exec(
      // Never past the database's clock: a pod whose clock jumped ahead would otherwise delete,
      // for every pod, events that have not expired.
      "DELETE FROM events WHERE (community_id, id) IN (SELECT community_id, id FROM events"
      " WHERE expires_at <= LEAST($1::bigint, extract(epoch FROM now())::bigint) LIMIT $2::bigint)",
      {std::to_string(now), std::to_string(purge_chunk)});
    return reply.ok() ? reply.affected_rows() : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

std::uint64_t event_store::purge_expired(std::int64_t now) {
  // In chunks, so a large backlog never becomes one long transaction holding many locks.
  std::uint64_t total = 0;
  for (;;) {
    auto purged = purge_expired_chunk(now);
    total += purged;
    if (purged < purge_chunk)
      return total;
  }
}

} // namespace comb::storage
