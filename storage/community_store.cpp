// SPDX-License-Identifier: MIT
#include "storage/community_store.hpp"

#include <exception>

#include "protocol/host.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// A host may be a community's primary host or one of its aliases in community_hosts.
constexpr const char* find_sql =
  "SELECT c.id, c.host, c.access, c.archived_at IS NOT NULL FROM communities c"
  " WHERE c.host = $1::text OR c.id = (SELECT h.community_id FROM community_hosts h"
  " WHERE h.host = $1::text) ORDER BY c.host = $1::text DESC LIMIT 1";

community_row row_of(const pg_reply& reply) {
  return community_row{reply.integer(0, 0), std::string(reply.text(0, 1)),
                       reply.text(0, 2) == "closed", reply.text(0, 3) == "t"};
}

} // namespace

community_store::community_store(pg_connection& connection) : connection_(connection) {}

std::optional<community_row> community_store::find_by_host(const std::string& host) {
  try {
    last_error_.clear();
    auto normalized = protocol::normalize_host(host);
    if (!normalized)
      return std::nullopt;
    auto reply = connection_.exec(find_sql, {*normalized});
    if (!reply.ok() && reply.connection_lost())
      reply = connection_.exec(find_sql, {*normalized}); // a read: once more, reconnected
    if (!reply.ok()) {
      last_error_ = reply.error();
      return std::nullopt;
    }
    if (reply.rows() == 0)
      return std::nullopt;
    return row_of(reply);
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

std::optional<community_row> community_store::ensure(const std::string& host,
                                                     const std::vector<std::string>& aliases,
                                                     bool closed) {
  try {
    last_error_.clear();
    auto primary = protocol::normalize_host(host);
    if (!primary) {
      last_error_ = "not a valid host: " + host;
      return std::nullopt;
    }
    pg_array hosts;
    hosts.add_text(*primary);
    for (const auto& alias : aliases)
      if (auto normalized = protocol::normalize_host(alias))
        hosts.add_text(*normalized);
    const std::string access = closed ? "closed" : "open";
    auto community = ensure_row(*primary, access);
    if (!community)
      return std::nullopt;
    // Aliases another community already holds stay with it (ON CONFLICT DO NOTHING).
    auto linked = connection_.exec(
      "INSERT INTO community_hosts (host, community_id)"
      " SELECT h, $2::bigint FROM unnest($1::text[]) AS h ON CONFLICT (host) DO NOTHING",
      {hosts.str(), std::to_string(community->id)});
    if (!linked.ok()) {
      last_error_ = linked.error();
      return std::nullopt;
    }
    return community;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

std::optional<community_row> community_store::ensure_row(const std::string& primary,
                                                         const std::string& access) {
  // A host already registered as another community's alias means that community.
  if (auto existing = find_by_host(primary)) {
    auto updated = connection_.exec(
      "UPDATE communities SET access = $2::text WHERE id = $1::bigint AND access <> $2::text",
      {std::to_string(existing->id), access});
    if (!updated.ok()) {
      last_error_ = updated.error();
      return std::nullopt;
    }
    existing->closed = access == "closed";
    return existing;
  }
  if (!last_error_.empty())
    return std::nullopt;
  // Several pods may get here at once: the unique host makes exactly one insert win, and the
  // others update the same row.
  auto reply = connection_.exec(
    "INSERT INTO communities (host, access) VALUES ($1::text, $2::text)"
    " ON CONFLICT (host) DO UPDATE SET access = EXCLUDED.access"
    " RETURNING id, host, access, archived_at IS NOT NULL",
    {primary, access});
  if (!reply.ok() || reply.rows() != 1) {
    last_error_ = reply.ok() ? "no community row returned" : reply.error();
    return std::nullopt;
  }
  return row_of(reply);
}

} // namespace comb::storage
