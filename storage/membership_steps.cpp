// SPDX-License-Identifier: MIT
#include "storage/membership_steps.hpp"

#include <algorithm>
#include <set>

#include "protocol/event_json.hpp"
#include "protocol/hex.hpp"
#include "storage/access_change.hpp"
#include "storage/event_rows.hpp"
#include "storage/member_list.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/pg_array.hpp"

namespace comb::storage::membership_steps {
namespace {

protocol::bytes32 hex_field(const pg_reply& reply, int row, int column) {
  return protocol::array_from_hex<32>(reply.text(row, column)).value_or(protocol::bytes32{});
}

void add_members(pg_array& keys, pg_array& roles, const std::vector<member>& members) {
  for (const auto& m : members) {
    keys.add_bytea(m.pubkey);
    roles.add_text(role_name(m.role));
  }
}

} // namespace

pg_reply read_live_list(pg_connection& connection, std::int64_t community_id,
                        const protocol::bytes32& signer) {
  return must(connection.exec("SELECT raw FROM events WHERE community_id = $1::bigint"
                              " AND pubkey = $2::bytea AND kind = $3::int",
                              {std::to_string(community_id), bytea_param(signer),
                               std::to_string(member_list_kind)}),
              "read list");
}

std::int64_t noted_version(pg_connection& connection, std::int64_t community_id,
                           const std::vector<protocol::bytes32>& written) {
  std::string error;
  auto version = note_access_change(connection, community_id, written, error);
  if (!version)
    throw statement_failed(error.empty() ? "community vanished while noting its change" : error);
  return *version;
}

std::vector<member> read_members(pg_connection& c, std::int64_t community_id) {
  auto reply = must(c.exec("SELECT encode(pubkey, 'hex'), role FROM members"
                           " WHERE community_id = $1::bigint ORDER BY position",
                           {std::to_string(community_id)}),
                    "read members");
  std::vector<member> members;
  members.reserve(static_cast<std::size_t>(reply.rows()));
  for (int row = 0; row < reply.rows(); ++row)
    members.push_back({hex_field(reply, row, 0),
                       parse_role(reply.text(row, 1)).value_or(member_role::member)});
  return members;
}

std::map<std::string, invite_state> read_invites(pg_connection& c, std::int64_t community_id,
                                                 std::span<const membership_command> commands,
                                                 const protocol::key_pair& relay_key) {
  pg_array hashes;
  std::map<std::string, std::string> minted_of_chosen;
  for (const auto& command : commands)
    if (command.change == membership_change::claim_invite) {
      auto code = invite_hashes(relay_key, community_id, command.invite_code);
      hashes.add_text(code.chosen);
      hashes.add_text(code.minted);
      minted_of_chosen.emplace(std::move(code.chosen), std::move(code.minted));
    }
  std::map<std::string, invite_state> invites;
  if (minted_of_chosen.empty())
    return invites;
  auto reply = must(c.exec("SELECT i.code_hash, i.expires_at, i.max_uses, i.use_count, i.revoked,"
                           " COALESCE(encode(i.created_by, 'hex'), ''), c.members_may_invite"
                           " FROM invites i JOIN communities c ON c.id = i.community_id"
                           " WHERE i.community_id = $1::bigint AND i.code_hash = ANY($2::text[])"
                           " ORDER BY i.code_hash FOR UPDATE OF i",
                           {std::to_string(community_id), hashes.str()}),
                    "read invites");
  for (int row = 0; row < reply.rows(); ++row) {
    invite_state invite{reply.integer(row, 1), reply.integer(row, 2), reply.integer(row, 3),
                        reply.text(row, 4) == "t", false, std::nullopt, reply.text(row, 6) == "t",
                        std::string(reply.text(row, 0))};
    if (!reply.text(row, 5).empty())
      invite.created_by = hex_field(reply, row, 5);
    // The rules find a code by its plain hash. Were a code stored under both keys (createclaim
    // refuses that, but a hand edit may not), its keyed row is the one used.
    if (auto chosen = minted_of_chosen.find(invite.stored_hash); chosen != minted_of_chosen.end())
      invites.insert_or_assign(chosen->second, std::move(invite));
    else
      invites.try_emplace(invite.stored_hash, std::move(invite));
  }
  return invites;
}

std::vector<protocol::bytes32> read_allowlist(pg_connection& c, std::int64_t community_id,
                                              std::span<const membership_command> commands) {
  bool wanted = std::any_of(commands.begin(), commands.end(), [](const auto& command) {
    return command.change == membership_change::backfill_allowlist;
  });
  std::vector<protocol::bytes32> pubkeys;
  if (!wanted)
    return pubkeys;
  auto reply = must(c.exec("SELECT encode(pubkey, 'hex') FROM allowlist"
                           " WHERE community_id = $1::bigint ORDER BY added_at, pubkey",
                           {std::to_string(community_id)}),
                    "read allowlist");
  for (int row = 0; row < reply.rows(); ++row)
    pubkeys.push_back(hex_field(reply, row, 0));
  return pubkeys;
}

namespace {

bool names_who_joins(const membership_command& command) {
  switch (command.change) {
    case membership_change::add_member:
    case membership_change::claim_membership:
    case membership_change::claim_invite:
    case membership_change::provision_owner:
    case membership_change::transfer_owner: return true;
    default: return false;
  }
}

/// Who added `pubkey`: the last command of the batch that added them (changed), or the batch's
/// own label for a member no command names (an allowlist's backfill). An admin's ban in the same
/// batch as a stranger's join is not who let the stranger in, nor is a join that found them in.
std::string added_by_for(const protocol::bytes32& pubkey, std::span<const membership_command> commands,
                         std::span<const membership_outcome> outcomes) {
  for (std::size_t i = std::min(commands.size(), outcomes.size()); i > 0; --i) {
    const auto& command = commands[i - 1];
    if (command.subject == pubkey && names_who_joins(command) && !command.added_by.empty()
        && outcomes[i - 1] == membership_outcome::changed)
      return command.added_by;
  }
  return added_by_of(commands);
}

} // namespace

void write_member_changes(pg_connection& c, std::int64_t community_id, const member_changes& changes,
                          std::span<const membership_command> commands,
                          std::span<const membership_outcome> outcomes) {
  pg_array demote_keys, demote_roles, promote_keys, promote_roles, removed, added_keys, added_roles, added_by;
  add_members(demote_keys, demote_roles, changes.demoted);
  add_members(promote_keys, promote_roles, changes.promoted);
  add_members(added_keys, added_roles, changes.added);
  for (const auto& m : changes.added)
    added_by.add_text(added_by_for(m.pubkey, commands, outcomes));
  for (const auto& pubkey : changes.removed)
    removed.add_bytea(pubkey);
  const std::string community = std::to_string(community_id);
  const char* update_sql =
    "UPDATE members m SET role = u.role, updated_at = now()"
    " FROM unnest($2::bytea[], $3::text[]) AS u(pubkey, role)"
    " WHERE m.community_id = $1::bigint AND m.pubkey = u.pubkey";
  if (!changes.demoted.empty())
    must(c.exec(update_sql, {community, demote_keys.str(), demote_roles.str()}), "demote");
  if (!changes.removed.empty())
    must(c.exec("DELETE FROM members WHERE community_id = $1::bigint AND pubkey = ANY($2::bytea[])",
                {community, removed.str()}),
         "remove members");
  if (!changes.promoted.empty())
    must(c.exec(update_sql, {community, promote_keys.str(), promote_roles.str()}), "promote");
  // WITH ORDINALITY keeps the list order of the new members in `position`.
  if (!changes.added.empty())
    must(c.exec("INSERT INTO members (community_id, pubkey, role, added_by)"
                " SELECT $1::bigint, u.pubkey, u.role, u.added_by FROM unnest($2::bytea[], $3::text[], $4::text[])"
                " WITH ORDINALITY AS u(pubkey, role, added_by, n) ORDER BY u.n",
                {community, added_keys.str(), added_roles.str(), added_by.str()}),
         "add members");
}

void write_used_invites(pg_connection& c, std::int64_t community_id,
                        const std::map<std::string, invite_state>& invites) {
  pg_array hashes, counts;
  for (const auto& [hash, invite] : invites)
    if (invite.used) {
      hashes.add_text(invite.stored_hash);
      counts.add_integer(invite.use_count);
    }
  must(c.exec("UPDATE invites i SET use_count = u.use_count"
              " FROM unnest($2::text[], $3::int[]) AS u(code_hash, use_count)"
              " WHERE i.community_id = $1::bigint AND i.code_hash = u.code_hash",
              {std::to_string(community_id), hashes.str(), counts.str()}),
       "use invites");
}

// A list gets no event_tags rows: migration 21's delete trigger relies on that for 13534.
void insert_list(pg_connection& c, std::int64_t community_id, const protocol::event& list,
                 const std::string& list_json) {
  must(c.exec("INSERT INTO events (community_id, id, pubkey, created_at, kind, d_tag, expires_at, raw)"
              " VALUES ($1::bigint, $2::bytea, $3::bytea, $4::bigint, $5::int, '', NULL, $6::text)"
              " ON CONFLICT (community_id, id) DO NOTHING",
              {std::to_string(community_id), bytea_param(list.id), bytea_param(list.pubkey),
               std::to_string(list.created_at), std::to_string(list.kind), list_json}),
       "insert list");
}

void insert_deltas(pg_connection& c, std::int64_t community_id,
                   const std::vector<membership_result>& results) {
  pg_array ids, pubkeys, times, kinds, raws;
  pg_array tag_ids, tag_values, tag_times, tag_kinds;
  // A batch that adds, removes and adds one key again in a second signs the same 8000 twice:
  // one event, whose tag row must be written once.
  std::set<protocol::bytes32> planned;
  for (const auto& result : results) {
    if (!result.delta || !planned.insert(result.delta->id).second)
      continue;
    const auto& ev = *result.delta;
    ids.add_bytea(ev.id);
    pubkeys.add_bytea(ev.pubkey);
    times.add_integer(ev.created_at);
    kinds.add_integer(ev.kind);
    raws.add_text(result.delta_json);
    if (const std::string* p = protocol::first_tag_value(ev, "p")) {
      tag_ids.add_bytea(ev.id);
      tag_values.add_text(*p);
      tag_times.add_integer(ev.created_at);
      tag_kinds.add_integer(ev.kind);
    }
  }
  if (ids.empty())
    return;
  const std::string community = std::to_string(community_id);
  // A delta identical to one already stored (same subject, kind and second) is that event.
  auto inserted = must(
    c.exec("INSERT INTO events (community_id, id, pubkey, created_at, kind, d_tag, expires_at, raw)"
           " SELECT $1::bigint, u.id, u.pubkey, u.created_at, u.kind, NULL, NULL, u.raw"
           " FROM unnest($2::bytea[], $3::bytea[], $4::bigint[], $5::int[], $6::text[])"
           " AS u(id, pubkey, created_at, kind, raw)"
           " ON CONFLICT (community_id, id) DO NOTHING RETURNING id",
           {community, ids.str(), pubkeys.str(), times.str(), kinds.str(), raws.str()}),
    "insert deltas");
  if (inserted.rows() == 0)
    return;
  must(c.exec("INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)"
              " SELECT $1::bigint, u.id, 'p', u.value, u.created_at, u.kind"
              " FROM unnest($2::bytea[], $3::text[], $4::bigint[], $5::int[])"
              " AS u(id, value, created_at, kind)"
              " WHERE NOT EXISTS (SELECT 1 FROM event_tags t WHERE t.community_id = $1::bigint"
              " AND t.name = 'p' AND t.value = u.value AND t.created_at = u.created_at"
              " AND t.event_id = u.id)",
              {community, tag_ids.str(), tag_values.str(), tag_times.str(), tag_kinds.str()}),
       "index deltas");
}

std::vector<protocol::bytes32> room_strays(pg_connection& c, std::int64_t community_id, bool closed,
                                           const protocol::bytes32& signer) {
  pg_array listed;
  auto live = read_live_list(c, community_id, signer);
  if (live.rows() > 0)
    if (auto list = parse_stored_list(live.text(0, 0)))
      if (auto named = members_of_list(*list))
        for (const auto& m : *named)
          listed.add_bytea(m.pubkey);
  auto strays = must(
    c.exec("SELECT DISTINCT encode(r.pubkey, 'hex') FROM room_members r WHERE r.community_id = $1::bigint AND ("
           " EXISTS (SELECT 1 FROM banned_pubkeys b WHERE b.community_id = r.community_id AND b.pubkey = r.pubkey)"
           " OR (NOT EXISTS (SELECT 1 FROM members m WHERE m.community_id = r.community_id AND m.pubkey = r.pubkey)"
           " AND ($2::boolean OR r.pubkey = ANY($3::bytea[]))))",
           {std::to_string(community_id), closed ? "true" : "false", listed.str()}),
    "read room strays");
  std::vector<protocol::bytes32> out;
  for (int row = 0; row < strays.rows(); ++row)
    out.push_back(hex_field(strays, row, 0));
  return out;
}

std::string added_by_of(std::span<const membership_command> commands) {
  for (const auto& command : commands)
    if (!command.added_by.empty())
      return command.added_by;
  return "relay";
}

membership_write failed_write(std::size_t commands, std::string error) {
  membership_write out;
  out.error = std::move(error);
  out.results.assign(commands, membership_result::of(membership_outcome::failed));
  return out;
}

} // namespace comb::storage::membership_steps
