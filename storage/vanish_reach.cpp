// SPDX-License-Identifier: MIT
#include "storage/vanish_reach.hpp"

#include <string>

#include "protocol/hex.hpp"
#include "protocol/nip62.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// Two index probes per community (events_author_kind, event_tags_value): a request costs in
// proportion to the deployment's communities, never a scan of its events.
constexpr const char* reached_sql =
  "SELECT c.id FROM communities c"
  " WHERE c.id <> $1::bigint"
  " AND ($4::boolean OR c.host = ANY($5::text[])"
  "      OR c.id IN (SELECT h.community_id FROM community_hosts h WHERE h.host = ANY($5::text[])))"
  " AND (EXISTS (SELECT 1 FROM events e WHERE e.community_id = c.id AND e.pubkey = $2::bytea"
  "              AND e.created_at <= $3::bigint)"
  "      OR EXISTS (SELECT 1 FROM event_tags t WHERE t.community_id = c.id AND t.name = 'p'"
  "                 AND t.value = $6::text AND t.kind = 1059))"
  " ORDER BY c.id";

} // namespace

std::optional<std::vector<std::int64_t>> communities_vanish_reaches(pg_connection& connection,
                                                                    const event_write& request) {
  const protocol::event& ev = *request.ev;
  const protocol::vanish_reach reach = protocol::reach_of_vanish_request(ev);
  if (!reach.all_relays && reach.hosts.empty())
    return std::vector<std::int64_t>{};
  pg_array hosts;
  for (const auto& host : reach.hosts)
    hosts.add_text(host);
  const std::string pubkey(reinterpret_cast<const char*>(ev.pubkey.data()), ev.pubkey.size());
  const pg_params params{std::to_string(request.community_id), pubkey, std::to_string(ev.created_at),
                         reach.all_relays ? "true" : "false", hosts.str(), protocol::to_hex(ev.pubkey)};
  static_assert(protocol::gift_wrap_kind == 1059);
  auto reply = connection.exec(reached_sql, params, std::vector<bool>{false, true});
  if (!reply.ok() && reply.connection_lost())
    reply = connection.exec(reached_sql, params, std::vector<bool>{false, true});
  if (!reply.ok())
    return std::nullopt;
  std::vector<std::int64_t> communities;
  for (int row = 0; row < reply.rows(); ++row)
    communities.push_back(reply.integer(row, 0));
  return communities;
}

} // namespace comb::storage
