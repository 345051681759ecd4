// SPDX-License-Identifier: MIT
#include "storage/membership_store.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <stdexcept>
#include <utility>

#include "protocol/canonical_json.hpp"
#include "protocol/event_json.hpp"
#include "storage/access_change.hpp"
#include "storage/ban_rows.hpp"
#include "storage/event_lock.hpp"
#include "storage/event_rows.hpp"
#include "storage/member_list.hpp"
#include "storage/membership_rules.hpp"
#include "storage/membership_steps.hpp"
#include "storage/nip43_rows.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"

namespace comb::storage {

using namespace membership_steps;

namespace {

/// Whether a batch takes access or standing away: someone leaves, is removed or banned, or
/// has their role changed.
bool takes_access(const roster& members, const membership_plan& plan) {
  auto changes = members.changes();
  return !changes.removed.empty() || !changes.demoted.empty()
         || std::ranges::any_of(plan.bans, [](const ban_change& ban) { return !ban.lifted; });
}

bool republishes(std::span<const membership_command> commands) {
  return std::ranges::any_of(commands, [](const membership_command& c) { return c.change == membership_change::republish; });
}

/// An archive freezes its community: what users and admins asked for before it and is still
/// queued is refused, not tried; the operator's own commands (no requester) apply. Returns the
/// commands still to apply, and marks the place of each one refused.
std::vector<membership_command> outside_archive(std::span<const membership_command> commands,
                                                std::vector<bool>& refused) {
  std::vector<membership_command> kept;
  refused.assign(commands.size(), false);
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (commands[i].requested_by)
      refused[i] = true;
    else
      kept.push_back(commands[i]);
  }
  return kept;
}

/// `results` of the commands kept, with the refused ones put back in their places.
std::vector<membership_result> with_refused(std::vector<membership_result> results,
                                            const std::vector<bool>& refused) {
  std::vector<membership_result> all;
  auto next = results.begin();
  for (bool was_refused : refused) {
    if (was_refused)
      all.push_back(membership_result::of(membership_outcome::archived));
    else
      all.push_back(next == results.end() ? membership_result::of(membership_outcome::failed) : std::move(*next++));
  }
  return all;
}

} // namespace

membership_store::membership_store(pg_connection& connection, const protocol::key_pair& relay_key)
  : connection_(connection), keys_(relay_key) {}

const protocol::key_pair& membership_store::key_of(std::int64_t community_id) {
  return keys_.of(connection_, community_id);
}

std::optional<protocol::key_pair> membership_store::signing_key(std::int64_t community_id) {
  try {
    return key_of(community_id);
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

void membership_store::write_list(std::int64_t community_id, std::int64_t newest_list_at,
                                  std::span<const membership_command> commands,
                                  const std::vector<std::uint32_t>& delta_kinds, std::int64_t now,
                                  membership_write& out) {
  std::int64_t created_at = next_list_time(now, newest_list_at);
  const auto& key = key_of(community_id);
  out.list = sign_member_list(key, out.members, created_at);
  out.list_json = protocol::render_event_json(*out.list);
  write_role_definitions(community_id, created_at, out);
  for (std::size_t i = 0; i < commands.size(); ++i)
    if (delta_kinds[i] != 0) {
      auto& result = out.results[i];
      result.delta = sign_member_delta(key, delta_kinds[i], commands[i].subject, created_at);
      result.delta_json = protocol::render_event_json(*result.delta);
    }
  // The list lock is the list's own address lock, the same one event writers of that address
  // take, and it is taken last: everything else this transaction needs is already held.
  address list_address{community_id, key.public_key(), member_list_kind, ""};
  must(connection_.exec("SELECT pg_advisory_xact_lock($1::bigint)",
                        {std::to_string(address_lock_key(list_address))}),
       "list lock");
  // Every 13534 of the community is the relay's (clients may not store one): one signed with
  // the relay key before communities had keys of their own goes too.
  must(connection_.exec("DELETE FROM events WHERE community_id = $1::bigint AND kind = $2::int",
                        {std::to_string(community_id), std::to_string(member_list_kind)}),
       "retire list");
  insert_list(connection_, community_id, *out.list, out.list_json);
  insert_deltas(connection_, community_id, out.results);
  must(connection_.exec("UPDATE communities SET newest_list_at = $2::bigint WHERE id = $1::bigint",
                        {std::to_string(community_id), std::to_string(created_at)}),
       "record list time");
  std::vector<protocol::bytes32> written;
  for (const auto& definition : out.role_definitions)
    written.push_back(definition.ev.id);
  written.push_back(out.list->id);
  for (const auto& result : out.results)
    if (result.delta)
      written.push_back(result.delta->id);
  for (const auto& room_event : out.room_events)
    written.push_back(room_event.ev.id);
  out.state_version = noted_version(connection_, community_id, written);
}

/// NIP-43: each role id a list names has a relay-signed 33534, written with the first list that
/// names it (the community row lock held by the caller keeps two writers from both adding one).
void membership_store::write_role_definitions(std::int64_t community_id, std::int64_t created_at,
                                              membership_write& out) {
  auto used = roles_used(out.members);
  if (used.empty())
    return;
  const auto& key = key_of(community_id);
  auto defined = read_role_ids(connection_, community_id, key.public_key());
  for (auto role : used) {
    if (defined.contains(std::string(*role_id(role))))
      continue;
    relay_signed_event definition{sign_role_definition(key, role, created_at), {}};
    definition.json = protocol::render_event_json(definition.ev);
    insert_role_definition(connection_, community_id, definition);
    out.role_definitions.push_back(std::move(definition));
  }
}

/// A member removed from the community leaves every room of it in the same transaction; when a
/// room's state is already ahead of this second, the whole change waits like the list does.
void membership_store::leave_rooms(std::int64_t community_id,
                                   const std::vector<protocol::bytes32>& removed, std::int64_t now,
                                   membership_write& out) {
  std::int64_t wait_until = 0;
  out.room_events = remove_from_rooms(connection_, key_of(community_id), community_id, removed, now, wait_until);
  if (wait_until != 0)
    throw list_must_wait{wait_until};
  if (!out.room_events.empty()) {
    auto rooms = load_rooms(connection_, community_id);
    if (!rooms)
      throw statement_failed("read rooms after removing members");
    out.rooms = std::move(*rooms);
  }
}

std::vector<member> membership_store::members_before(std::int64_t community_id,
                                                     std::int64_t state_version,
                                                     const std::string& list_id) {
  auto it = snapshots_.find(community_id);
  if (it != snapshots_.end() && it->second.state_version == state_version
      && it->second.list_id == list_id)
    return it->second.members;
  return read_members(connection_, community_id);
}

std::string membership_store::live_list_id(std::int64_t community_id) {
  auto reply = must(connection_.exec("SELECT encode(id, 'hex') FROM events WHERE community_id = $1::bigint"
                                     " AND pubkey = $2::bytea AND kind = $3::int"
                                     " ORDER BY created_at DESC LIMIT 1",
                                     {std::to_string(community_id), bytea_param(key_of(community_id).public_key()),
                                      std::to_string(member_list_kind)}),
                    "read the live list");
  return reply.rows() == 0 ? std::string() : std::string(reply.text(0, 0));
}

membership_write membership_store::must_wait(std::size_t commands, std::int64_t until) {
  (void)connection_.exec("ROLLBACK");
  pending_snapshot_.reset();
  auto out = failed_write(commands, "the list of this second is written; waiting");
  out.retry_at = until;
  return out;
}

void membership_store::keep_snapshot() {
  if (!pending_snapshot_)
    return;
  // Bounded: a pod serving many large communities keeps the latest one rather than all.
  constexpr std::size_t max_snapshot_members = 1'000'000;
  std::size_t total = pending_snapshot_->second.members.size();
  for (const auto& [id, snapshot] : snapshots_)
    if (id != pending_snapshot_->first)
      total += snapshot.members.size();
  if (total > max_snapshot_members)
    snapshots_.clear();
  snapshots_[pending_snapshot_->first] = std::move(pending_snapshot_->second);
  pending_snapshot_.reset();
}

void membership_store::drop_snapshot(std::int64_t community_id) {
  pending_snapshot_.reset();
  snapshots_.erase(community_id);
}

membership_write membership_store::apply_locked(std::int64_t community_id,
                                                std::span<const membership_command> commands,
                                                std::int64_t now) {
  const std::string community = std::to_string(community_id);
  // FOR NO KEY UPDATE, never FOR UPDATE: event writers lock this row FOR KEY SHARE (each
  // batch's snapshot) and must not wait for a membership write (a test checks it).
  auto locked = must(connection_.exec("SELECT newest_list_at, state_version, access = 'closed',"
                                      " archived_at IS NOT NULL"
                                      " FROM communities WHERE id = $1::bigint FOR NO KEY UPDATE",
                                      {community}),
                     "lock community");
  if (locked.rows() == 0)
    throw statement_failed("community " + community + " does not exist");
  std::int64_t newest_list_at = locked.integer(0, 0);
  std::int64_t state_version = locked.integer(0, 1);
  // The row decides, not what the sending pod's cache had: its access, and whether it is archived.
  std::vector<bool> refused;
  std::vector<membership_command> rewritten;
  if (locked.text(0, 3) == "t") {
    rewritten = outside_archive(commands, refused);
    commands = rewritten;
  }
  if (locked.text(0, 2) == "t") {
    rewritten = joins_in_closed_community(commands);
    commands = rewritten;
  }
  // Read after the row lock, in a statement of its own: it sees every list committed before.
  std::string list_id = live_list_id(community_id);
  roster members(members_before(community_id, state_version, list_id));
  auto invites = read_invites(connection_, community_id, commands, keys_.relay_key());
  auto allowlist = read_allowlist(connection_, community_id, commands);
  auto bans = read_bans(connection_, community_id, commands, members.owner());
  auto claims = claim_requests(connection_, community_id, commands, now);
  auto plan = plan_membership(members, commands, invites, allowlist, bans.banned, now, claims.earlier,
                              keys_.own_keys(connection_, community_id), bans.owner_held);
  // Lists keep pace with the clock, decided under the row lock so it holds for every pod: a
  // list never gets a created_at ahead of now; when this second already has one, wait. A batch
  // that takes access away goes one second ahead instead, never more (DESIGN): pods' clocks
  // differ a little, the pod whose clock is ahead takes each second first, and a ban sent to
  // another pod would otherwise wait as long as that one stays busy (rooms: remove_from_rooms).
  // Only a change that takes access away skips a wait past max_list_wait_seconds: each one
  // moves the list a second further ahead, and those are few (a wave of joins would move it
  // hours ahead), while a removal left waiting leaves its member their access.
  const bool takes_away = plan.list_changed && takes_access(members, plan);
  const bool clock_behind = takes_away && newest_list_at - now > max_list_wait_seconds;
  if (plan.list_changed && newest_list_at >= now && !clock_behind) {
    if (!takes_away || newest_list_at > now)
      throw list_must_wait{takes_away ? newest_list_at : newest_list_at + 1};
  }
  // Whoever this takes posting from may not post from this commit on: a batch that read them as
  // a poster commits before it. A removal takes the community (when closed) and its restricted
  // rooms (whoever leaves it leaves them, open or closed); a demoted admin no longer posts in
  // every restricted room. Bans take the lock in read_bans.
  // A republish after hand edits takes out of the rooms whoever the edits took out of the
  // community (a removal by hand left them in its restricted and hidden rooms).
  std::vector<protocol::bytes32> strays;
  if (plan.list_changed && republishes(commands))
    strays = room_strays(connection_, community_id, locked.text(0, 2) == "t", key_of(community_id).public_key());
  if (takes_access(members, plan) || !strays.empty())
    lock_community_events(connection_, community_id);
  record_request_outcomes(connection_, community_id, claims, plan.outcomes);
  membership_write out;
  out.committed = true;
  out.state_version = state_version;
  out.previous_version = state_version;
  if (plan.list_changed && clock_behind)
    out.clock_behind_seconds = newest_list_at - now;
  for (auto outcome : plan.outcomes)
    out.results.push_back(membership_result::of(outcome));
  out.members = members.members();
  write_bans(connection_, community_id, plan.bans);
  // Whoever leaves the community leaves its rooms; so does whoever is banned from it, member or
  // not (in an open community anyone may be in a room).
  auto leaving = members.changes().removed;
  for (const auto& stray : strays)
    if (std::find(leaving.begin(), leaving.end(), stray) == leaving.end())
      leaving.push_back(stray);
  for (const auto& ban : plan.bans)
    if (!ban.lifted && std::find(leaving.begin(), leaving.end(), ban.pubkey) == leaving.end())
      leaving.push_back(ban.pubkey);
  if (plan.list_changed) {
    write_member_changes(connection_, community_id, members.changes(), commands, plan.outcomes);
    leave_rooms(community_id, leaving, now, out);
    write_used_invites(connection_, community_id, invites);
    write_list(community_id, newest_list_at, commands, plan.delta_kinds, now, out);
  } else if (!plan.bans.empty()) {
    leave_rooms(community_id, leaving, now, out);
    // Pods reload the bans; the room state a banned non-member's leaving rewrote reaches their
    // subscribers from the database too (noted_events), whatever the bridge is doing.
    std::vector<protocol::bytes32> written;
    for (const auto& room_event : out.room_events)
      written.push_back(room_event.ev.id);
    out.state_version = noted_version(connection_, community_id, written);
  }
  if (out.list)
    list_id = protocol::to_hex(out.list->id);
  pending_snapshot_.emplace(community_id, members_snapshot{out.state_version, list_id, out.members});
  if (!refused.empty())
    out.results = with_refused(std::move(out.results), refused);
  return out;
}

membership_write membership_store::apply(std::int64_t community_id,
                                         std::span<const membership_command> commands,
                                         std::int64_t now) {
  last_error_.clear();
  try {
    must(connection_.exec("BEGIN"), "begin");
    auto out = apply_locked(community_id, commands, now);
    must(connection_.exec("COMMIT"), "commit");
    keep_snapshot();
    return out;
  } catch (const list_must_wait& wait) {
    return must_wait(commands.size(), wait.until);
  } catch (const std::exception& e) {
    (void)connection_.exec("ROLLBACK");
    drop_snapshot(community_id);
    last_error_ = e.what();
    return failed_write(commands.size(), last_error_);
  }
}

membership_write membership_store::apply_paced(std::int64_t community_id,
                                               std::span<const membership_command> commands,
                                               std::int64_t now, const second_waiter& wait_until) {
  for (;;) {
    auto write = apply(community_id, commands, now);
    if (write.retry_at == 0)
      return write;
    now = wait_until(write.retry_at);
  }
}

std::int64_t sleep_until_second(std::int64_t second) {
  using clock = std::chrono::system_clock;
  std::this_thread::sleep_until(clock::time_point(std::chrono::seconds(second)));
  return std::chrono::duration_cast<std::chrono::seconds>(clock::now().time_since_epoch()).count();
}

community_creation membership_store::create_community_with_owner(const std::string& host,
                                                                 const protocol::bytes32& owner,
                                                                 bool closed, std::int64_t now) {
  last_error_.clear();
  community_creation out;
  membership_command provision{membership_change::provision_owner, owner, member_role::owner,
                               std::nullopt, {}, "operator", std::nullopt, std::nullopt, {}};
  try {
    must(connection_.exec("BEGIN"), "begin");
    auto created = must(
      connection_.exec("INSERT INTO communities (host, access) SELECT $1::text, $2::text"
                       " WHERE NOT EXISTS (SELECT 1 FROM community_hosts WHERE host = $1::text)"
                       " ON CONFLICT (host) DO NOTHING RETURNING id",
                       {host, closed ? "closed" : "open"}),
      "create community");
    if (created.rows() == 0) {
      must(connection_.exec("COMMIT"), "commit");
      out.result = community_creation::status::host_exists;
      return out;
    }
    std::int64_t id = created.integer(0, 0);
    out.write = apply_locked(id, std::span(&provision, 1), now);
    must(connection_.exec("COMMIT"), "commit");
    keep_snapshot();
    out.result = community_creation::status::created;
    out.community = community_row{id, host, closed, false, {}};
    return out;
  } catch (const list_must_wait&) { // a new community has no list yet: cannot happen
    (void)connection_.exec("ROLLBACK");
    pending_snapshot_.reset();
    last_error_ = "unexpected wait for the list clock";
    out.write = failed_write(1, last_error_);
    return out;
  } catch (const std::exception& e) {
    (void)connection_.exec("ROLLBACK");
    pending_snapshot_.reset();
    last_error_ = e.what();
    out.write = failed_write(1, last_error_);
    return out;
  }
}

std::optional<std::vector<member>> load_members(pg_connection& connection,
                                                std::int64_t community_id) {
  try {
    return read_members(connection, community_id);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::vector<member>> membership_store::members(std::int64_t community_id) {
  last_error_.clear();
  try {
    return read_members(connection_, community_id);
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

bool membership_store::members_may_invite(std::int64_t community_id) {
  auto reply = connection_.exec("SELECT members_may_invite FROM communities WHERE id = $1::bigint",
                                {std::to_string(community_id)});
  return reply.ok() && reply.rows() == 1 && reply.text(0, 0) == "t";
}

} // namespace comb::storage
