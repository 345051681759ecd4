// SPDX-License-Identifier: MIT
#pragma once

// The steps of a membership transaction (membership_store): each reads or writes one kind of
// row, throws statement_failed on a database error, and leaves the transaction to its caller.

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "storage/membership.hpp"
#include "storage/membership_rules.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage::membership_steps {

/// The newest list already has this second: the change must wait for the next one.
struct list_must_wait {
  std::int64_t until = 0;
};

/// The community's live 13534 (no row when it has none).
pg_reply read_live_list(pg_connection& connection, std::int64_t community_id,
                        const protocol::bytes32& signer);

/// Bumps the community's state version and notifies every pod on commit (note_access_change).
std::int64_t noted_version(pg_connection& connection, std::int64_t community_id,
                           const std::vector<protocol::bytes32>& written);

/// The members in list order.
std::vector<member> read_members(pg_connection& c, std::int64_t community_id);

/// The invites the commands claim, locked for update, by the plain hash of the code
/// (invite_code_hash), whether stored under it or under the relay key's (invite_hashes).
std::map<std::string, invite_state> read_invites(pg_connection& c, std::int64_t community_id,
                                                 std::span<const membership_command> commands,
                                                 const protocol::key_pair& relay_key);

/// The allowlist, when a command backfills it; otherwise empty.
std::vector<protocol::bytes32> read_allowlist(pg_connection& c, std::int64_t community_id,
                                              std::span<const membership_command> commands);

/// Writes a batch's changes in the order `member_changes` gives, so the table never holds two
/// owners; each step is one statement, whatever the batch's size. Each added member is recorded
/// as added by the command of `commands` that added them (`outcomes`: each command's, in order).
void write_member_changes(pg_connection& c, std::int64_t community_id, const member_changes& changes,
                          std::span<const membership_command> commands,
                          std::span<const membership_outcome> outcomes);

void write_used_invites(pg_connection& c, std::int64_t community_id,
                        const std::map<std::string, invite_state>& invites);

/// The list goes in as one plain text parameter: at 10,000 members it is about 750 KB, which as
/// an array literal would be escaped here and parsed again by Postgres.
void insert_list(pg_connection& c, std::int64_t community_id, const protocol::event& list,
                 const std::string& list_json);

/// The 8000/8001 deltas of `results`, with their `p` tags indexed.
void insert_deltas(pg_connection& c, std::int64_t community_id,
                   const std::vector<membership_result>& results);

/// For a republish (after hand edits of the members or bans): who is in a room of the community
/// and may no longer be: banned from it, not a member of a closed one, or named by its live list
/// and no longer a member (whoever leaves the community leaves its rooms).
std::vector<protocol::bytes32> room_strays(pg_connection& c, std::int64_t community_id, bool closed,
                                           const protocol::bytes32& signer);

/// Who the batch names as having added members ("relay" when none does).
std::string added_by_of(std::span<const membership_command> commands);

/// A write that applied none of its `commands`.
membership_write failed_write(std::size_t commands, std::string error);

} // namespace comb::storage::membership_steps
