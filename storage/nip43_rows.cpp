// SPDX-License-Identifier: MIT
#include "storage/nip43_rows.hpp"

#include <boost/json.hpp>
#include <map>
#include <stdexcept>

#include "protocol/event_json.hpp"
#include "storage/member_list.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

pg_reply checked(pg_reply reply, const char* step) {
  if (!reply.ok())
    throw std::runtime_error(std::string(step) + ": " + reply.error());
  return reply;
}

protocol::bytes32 hex_field(const pg_reply& reply, int row, int column) {
  return protocol::array_from_hex<32>(reply.text(row, column)).value_or(protocol::bytes32{});
}

/// Earlier outcomes of ids that were already remembered.
std::map<protocol::bytes32, membership_outcome> earlier_outcomes(pg_connection& c,
                                                                 const std::string& community,
                                                                 const pg_array& ids) {
  auto reply = checked(c.exec("SELECT encode(event_id, 'hex'), outcome FROM processed_requests"
                              " WHERE community_id = $1::bigint AND event_id = ANY($2::bytea[])",
                              {community, ids.str()}),
                       "read processed requests");
  std::map<protocol::bytes32, membership_outcome> out;
  for (int row = 0; row < reply.rows(); ++row)
    out[hex_field(reply, row, 0)] =
      parse_outcome(reply.text(row, 1)).value_or(membership_outcome::already_processed);
  return out;
}

} // namespace

request_claims claim_requests(pg_connection& c, std::int64_t community_id,
                              std::span<const membership_command> commands, std::int64_t now) {
  request_claims claims;
  claims.earlier.resize(commands.size());
  std::map<protocol::bytes32, std::size_t> first_of;
  pg_array ids;
  for (std::size_t i = 0; i < commands.size(); ++i)
    if (commands[i].request_id && first_of.emplace(*commands[i].request_id, i).second)
      ids.add_bytea(*commands[i].request_id);
  if (first_of.empty())
    return claims;
  const std::string community = std::to_string(community_id);
  checked(c.exec("DELETE FROM processed_requests WHERE community_id = $1::bigint"
                 " AND expires_at < $2::bigint",
                 {community, std::to_string(now)}),
          "forget old requests");
  auto inserted = checked(
    c.exec("INSERT INTO processed_requests (community_id, event_id, expires_at)"
           " SELECT $1::bigint, u.id, $3::bigint FROM unnest($2::bytea[]) AS u(id)"
           " ON CONFLICT DO NOTHING RETURNING encode(event_id, 'hex')",
           {community, ids.str(), std::to_string(now + 2 * request_window_seconds)}),
    "remember requests");
  for (int row = 0; row < inserted.rows(); ++row) {
    auto id = hex_field(inserted, row, 0);
    claims.fresh.emplace_back(id, first_of.at(id));
    first_of.erase(id);
  }
  if (first_of.empty())
    return claims;
  // What is left in `first_of` was remembered before this transaction.
  auto earlier = earlier_outcomes(c, community, ids);
  for (std::size_t i = 0; i < commands.size(); ++i)
    if (commands[i].request_id && first_of.contains(*commands[i].request_id))
      if (auto it = earlier.find(*commands[i].request_id); it != earlier.end())
        claims.earlier[i] = it->second;
  return claims;
}

std::uint64_t forget_processed_requests(pg_connection& c, std::int64_t now) {
  try {
    auto reply = c.exec("DELETE FROM processed_requests WHERE expires_at < $1::bigint",
                        {std::to_string(now)});
    return reply.ok() ? reply.affected_rows() : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

void record_request_outcomes(pg_connection& c, std::int64_t community_id,
                             const request_claims& claims,
                             const std::vector<membership_outcome>& outcomes) {
  if (claims.fresh.empty())
    return;
  pg_array ids, names, forgotten;
  bool any_forgotten = false;
  for (const auto& [id, index] : claims.fresh) {
    // Refused only because the community was full: forgotten, as a request never tried (busy
    // ones never get here), so the same request sent again once there is room is applied.
    if (outcomes.at(index) == membership_outcome::community_full) {
      forgotten.add_bytea(id);
      any_forgotten = true;
      continue;
    }
    ids.add_bytea(id);
    names.add_text(outcome_name(outcomes.at(index)));
  }
  if (any_forgotten)
    checked(c.exec("DELETE FROM processed_requests WHERE community_id = $1::bigint"
                   " AND event_id = ANY($2::bytea[])",
                   {std::to_string(community_id), forgotten.str()}),
            "forget requests refused for a full community");
  checked(c.exec("UPDATE processed_requests p SET outcome = u.outcome"
                 " FROM unnest($2::bytea[], $3::text[]) AS u(id, outcome)"
                 " WHERE p.community_id = $1::bigint AND p.event_id = u.id",
                 {std::to_string(community_id), ids.str(), names.str()}),
          "record request outcomes");
}

std::set<std::string> read_role_ids(pg_connection& c, std::int64_t community_id,
                                    const protocol::bytes32& signer) {
  auto reply = checked(c.exec("SELECT d_tag FROM events WHERE community_id = $1::bigint"
                              " AND pubkey = $2::bytea AND kind = $3::int",
                              {std::to_string(community_id), bytea_param(signer),
                               std::to_string(role_definition_kind)}),
                       "read role definitions");
  std::set<std::string> ids;
  for (int row = 0; row < reply.rows(); ++row)
    ids.emplace(reply.text(row, 0));
  return ids;
}

void insert_role_definition(pg_connection& c, std::int64_t community_id,
                            const relay_signed_event& definition) {
  const auto& ev = definition.ev;
  const std::string community = std::to_string(community_id);
  const std::string d(protocol::d_tag(ev));
  checked(c.exec("INSERT INTO events (community_id, id, pubkey, created_at, kind, d_tag, expires_at, raw)"
                 " VALUES ($1::bigint, $2::bytea, $3::bytea, $4::bigint, $5::int, $6::text, NULL, $7::text)",
                 {community, bytea_param(ev.id), bytea_param(ev.pubkey),
                  std::to_string(ev.created_at), std::to_string(ev.kind), d, definition.json}),
          "insert role definition");
  checked(c.exec("INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)"
                 " VALUES ($1::bigint, $2::bytea, 'd', $3::text, $4::bigint, $5::int)",
                 {community, bytea_param(ev.id), d, std::to_string(ev.created_at),
                  std::to_string(ev.kind)}),
          "index role definition");
}

std::optional<protocol::event> parse_stored_list(std::string_view raw) {
  boost::system::error_code ec;
  auto json = boost::json::parse(raw, ec);
  if (ec)
    return std::nullopt;
  auto list = protocol::event_from_json(json, protocol::protocol_limits{
                                                .max_tags_per_event = 10'000'000,
                                                .max_tag_elements_per_event = 40'000'000,
                                                .max_content_bytes = 1 << 30});
  if (!list)
    return std::nullopt;
  return std::move(list).value();
}

} // namespace comb::storage
