// SPDX-License-Identifier: MIT
#include "storage/ban_rows.hpp"

#include "storage/event_lock.hpp"

#include <stdexcept>

#include "storage/event_rows.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

protocol::bytes32 hex_field(const pg_reply& reply, int row, int column) {
  return protocol::array_from_hex<32>(reply.text(row, column)).value_or(protocol::bytes32{});
}

bool reads_bans(membership_change change) {
  switch (change) {
    case membership_change::add_member:
    case membership_change::claim_membership:
    case membership_change::claim_invite:
    case membership_change::provision_owner:
    case membership_change::transfer_owner:
    case membership_change::ban_pubkey:
    case membership_change::unban_pubkey: return true;
    default: return false;
  }
}

} // namespace

ban_reading read_bans(pg_connection& c, std::int64_t community_id,
                      std::span<const membership_command> commands,
                      const std::optional<protocol::bytes32>& owner) {
  pg_array subjects;
  bool any = false, bans = false;
  for (const auto& command : commands)
    if (reads_bans(command.change)) {
      subjects.add_bytea(command.subject);
      any = true;
      bans = bans || command.change == membership_change::ban_pubkey;
    }
  ban_reading out;
  if (!any)
    return out;
  if (bans)
    lock_community_events(c, community_id);
  auto reply = must(c.exec("SELECT encode(pubkey, 'hex'), banned_by IS NULL OR banned_by = $3::bytea"
                           " FROM banned_pubkeys WHERE community_id = $1::bigint AND pubkey = ANY($2::bytea[])",
                           {std::to_string(community_id), subjects.str(),
                            owner ? std::optional(bytea_param(*owner)) : std::nullopt}),
                    "read bans");
  for (int row = 0; row < reply.rows(); ++row) {
    auto pubkey = hex_field(reply, row, 0);
    out.banned.insert(pubkey);
    if (reply.text(row, 1) == std::string_view("t"))
      out.owner_held.insert(pubkey);
  }
  return out;
}

void write_bans(pg_connection& c, std::int64_t community_id, const std::vector<ban_change>& bans) {
  const std::string community = std::to_string(community_id);
  for (const auto& ban : bans) {
    if (ban.lifted)
      must(c.exec("DELETE FROM banned_pubkeys WHERE community_id = $1::bigint AND pubkey = $2::bytea",
                  {community, bytea_param(ban.pubkey)}),
           "unban");
    else
      // A ban the plan writes again is one the owner or the operator takes over (ban).
      must(c.exec("INSERT INTO banned_pubkeys (community_id, pubkey, reason, banned_by)"
                  " VALUES ($1::bigint, $2::bytea, $3::text, $4::bytea)"
                  " ON CONFLICT (community_id, pubkey) DO UPDATE SET banned_by = EXCLUDED.banned_by,"
                  " reason = CASE WHEN EXCLUDED.reason = '' THEN banned_pubkeys.reason"
                  " ELSE EXCLUDED.reason END",
                  {community, bytea_param(ban.pubkey), ban.reason,
                   ban.banned_by ? std::optional(bytea_param(*ban.banned_by)) : std::nullopt}),
           "ban");
  }
}

} // namespace comb::storage
