// SPDX-License-Identifier: MIT
#include "storage/room_store.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "protocol/canonical_json.hpp"
#include "protocol/hex.hpp"
#include "protocol/room_events.hpp"
#include "storage/access_change.hpp"
#include "storage/event_lock.hpp"
#include "storage/event_rows.hpp"
#include "storage/membership_rules.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_rows.hpp"
#include "storage/room_transaction.hpp"

namespace comb::storage {
namespace {

using protocol::room_outcome;
using protocol::room_state;

protocol::community_standing standing_of(pg_connection& c, std::int64_t community_id,
                                         const protocol::bytes32& pubkey) {
  auto reply = must(c.exec("SELECT role FROM members WHERE community_id = $1::bigint"
                           " AND pubkey = $2::bytea",
                           {std::to_string(community_id), bytea_param(pubkey)}),
                    "read standing");
  if (reply.rows() == 0)
    return protocol::community_standing::outsider;
  return storage::standing_of(parse_role(reply.text(0, 0)).value_or(member_role::member));
}

/// NIP-40's expiration of `ev` as a statement parameter; SQL NULL when it has none.
std::optional<std::string> expiry_param(const protocol::event& ev) {
  auto expiry = protocol::expiration_of(ev);
  return expiry ? std::optional(std::to_string(*expiry)) : std::nullopt;
}

void set_room_clock(pg_connection& c, std::int64_t community_id, const std::string& room,
                    std::int64_t at) {
  must(c.exec("INSERT INTO room_clocks (community_id, room_id, newest_state_at)"
              " VALUES ($1::bigint, $2, $3::bigint) ON CONFLICT (community_id, room_id)"
              " DO UPDATE SET newest_state_at = EXCLUDED.newest_state_at",
              {std::to_string(community_id), room, std::to_string(at)}),
       "record room clock");
}

} // namespace

void insert_event(pg_connection& c, std::int64_t community_id, const relay_signed_event& stored) {
  const auto& ev = stored.ev;
  const std::string community = std::to_string(community_id);
  bool addressable = protocol::classify(ev.kind) == protocol::kind_class::addressable;
  auto inserted = must(
    c.exec("INSERT INTO events (community_id, id, pubkey, created_at, kind, d_tag, expires_at, raw)"
           " VALUES ($1::bigint, $2::bytea, $3::bytea, $4::bigint, $5::int, $6, $7::bigint, $8::text)"
           " ON CONFLICT (community_id, id) DO NOTHING RETURNING id",
           {community, bytea_param(ev.id), bytea_param(ev.pubkey), std::to_string(ev.created_at),
            std::to_string(ev.kind),
            addressable ? std::optional(address_key(protocol::d_tag(ev))) : std::nullopt,
            expiry_param(ev), stored.json}),
    "insert room event");
  if (inserted.rows() == 0)
    return;
  pg_array names, values;
  for (const auto& [name, value] : indexed_tags(ev)) {
    names.add_text(std::string(1, name));
    values.add_text(value);
  }
  must(c.exec("INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)"
              " SELECT $1::bigint, $2::bytea, u.name, u.value, $3::bigint, $4::int"
              " FROM unnest($5::text[], $6::text[]) AS u(name, value)",
              {community, bytea_param(ev.id), std::to_string(ev.created_at),
               std::to_string(ev.kind), names.str(), values.str()}),
       "index room event");
}

namespace {

relay_signed_event rendered(protocol::event ev) {
  relay_signed_event out{std::move(ev), {}};
  out.json = protocol::render_event_json(out.ev);
  return out;
}

/// Retires the room's previous relay-signed events of `kinds`.
void retire_state(pg_connection& c, std::int64_t community_id, const protocol::bytes32& relay,
                  const std::string& room, const std::vector<std::uint32_t>& kinds) {
  pg_array wanted;
  for (auto kind : kinds)
    wanted.add_integer(kind);
  must(c.exec("DELETE FROM events WHERE community_id = $1::bigint AND pubkey = $2::bytea"
              " AND kind = ANY($3::int[]) AND d_tag = $4",
              {std::to_string(community_id), bytea_param(relay), wanted.str(), address_key(room)}),
       "retire room state");
}

/// 9005: the named events of this room (posted in it, or borrowing it: a comment in one of its
/// threads, a report or zap receipt of one of its events) go, and are remembered so a re-post
/// is refused. Returns how many went. As a NIP-86 event ban: never the relay's own records
/// (signed by `own_keys`: room state, the 9000/9001 it issues), and none of the owner's events
/// unless the owner deletes them.
std::int64_t delete_room_events(pg_connection& c, std::int64_t community_id, const std::string& room,
                                const std::vector<protocol::bytes32>& targets,
                                const std::set<protocol::bytes32>& own_keys, const protocol::bytes32& deleter) {
  pg_array ids;
  for (const auto& id : targets)
    ids.add_bytea(id);
  pg_array protected_keys;
  for (const auto& key : own_keys)
    protected_keys.add_bytea(key);
  return static_cast<std::int64_t>(must(c.exec("WITH gone AS (DELETE FROM events e WHERE e.community_id = $1::bigint"
              " AND e.id = ANY($3::bytea[]) AND EXISTS (SELECT 1 FROM event_tags t"
              " WHERE t.community_id = $1::bigint AND t.event_id = e.id AND t.name IN ('h', 'room')"
              " AND t.created_at = e.created_at AND t.value = $2)"
              " AND NOT e.pubkey = ANY($4::bytea[])"
              " AND (e.pubkey = $5::bytea OR NOT EXISTS (SELECT 1 FROM members m"
              " WHERE m.community_id = $1::bigint AND m.pubkey = e.pubkey AND m.role = 'owner'))"
              " RETURNING e.id, e.pubkey)"
              " INSERT INTO deleted_events (community_id, event_id, pubkey)"
              " SELECT $1::bigint, id, pubkey FROM gone ON CONFLICT DO NOTHING",
              {std::to_string(community_id), room, ids.str(), protected_keys.str(), bytea_param(deleter)}),
              "delete room events")
                                     .affected_rows());
}

/// 9008: the room, its members, invites, state and every event posted to it.
void delete_room(pg_connection& c, const protocol::key_pair& relay, std::int64_t community_id,
                 const std::string& room) {
  const std::string community = std::to_string(community_id);
  // Exclusive, as a ban of an event takes it: each insert batch holds it shared and reads the
  // rooms its events were admitted into after it, so an event posted to this room either
  // committed before (and is deleted below) or is refused for its deleted room.
  lock_community_events(c, community_id);
  must(c.exec("DELETE FROM events e WHERE e.community_id = $1::bigint AND e.id IN"
              " (SELECT t.event_id FROM event_tags t WHERE t.community_id = $1::bigint"
              " AND t.name IN ('h', 'room') AND t.value = $2)",
              {community, room}),
       "delete room's events");
  retire_state(c, community_id, relay.public_key(), room,
               {protocol::room_metadata_kind, protocol::room_admins_kind,
                protocol::room_members_kind, protocol::room_roles_kind, 39004,
                protocol::room_pins_kind});
  must(c.exec("DELETE FROM rooms WHERE community_id = $1::bigint AND room_id = $2",
              {community, room}),
       "delete room");
}

/// The bounds a room change must stay within; the outcome naming the one it would pass.
std::optional<room_outcome> check_bounds(pg_connection& c, std::int64_t community_id,
                                         const protocol::room_plan& plan, const room_state& before,
                                         const std::string& room) {
  const std::string community = std::to_string(community_id);
  if (!before.exists
      && row_count(c, "SELECT count(*) FROM rooms WHERE community_id = $1::bigint", {community},
               "count rooms")
           >= max_rooms_per_community)
    return room_outcome::too_many_rooms;
  if (plan.after.members.size() > before.members.size()
      && static_cast<std::int64_t>(plan.after.members.size()) > max_members_per_room)
    return room_outcome::too_many_members;
  if (plan.store_invite
      && row_count(c, "SELECT count(*) FROM room_invites WHERE community_id = $1::bigint AND room_id = $2",
               {community, room}, "count invites")
           >= max_invites_per_room)
    return room_outcome::too_many_invites;
  return std::nullopt;
}

} // namespace

/// Notes the access change of the transaction that wrote `events`; its new state version.
std::int64_t noted_change(pg_connection& c, std::int64_t community_id,
                          const std::vector<relay_signed_event>& events) {
  std::vector<protocol::bytes32> written;
  for (const auto& ev : events)
    written.push_back(ev.ev.id);
  std::string error;
  auto version = note_access_change(c, community_id, written, error);
  if (!version)
    throw statement_failed(error.empty() ? "community vanished" : error);
  return *version;
}

std::int64_t room_clock(pg_connection& c, std::int64_t community_id, const std::string& room) {
  auto reply = must(c.exec("SELECT newest_state_at FROM room_clocks"
                           " WHERE community_id = $1::bigint AND room_id = $2",
                           {std::to_string(community_id), room}),
                    "read room clock");
  return reply.rows() == 0 ? 0 : reply.integer(0, 0);
}


/// Signs, retires and stores the relay-signed events of `parts`, at one paced second.
std::vector<relay_signed_event> write_state(pg_connection& c, const protocol::key_pair& relay,
                                            std::int64_t community_id, const room_state& room,
                                            const protocol::room_parts& parts,
                                            std::int64_t created_at) {
  std::vector<relay_signed_event> out;
  if (parts.metadata)
    out.push_back(rendered(protocol::sign_room_metadata(relay, room, created_at)));
  if (parts.admins)
    out.push_back(rendered(protocol::sign_room_admins(relay, room, created_at)));
  if (parts.members)
    out.push_back(rendered(protocol::sign_room_members(relay, room, created_at)));
  if (parts.roles)
    out.push_back(rendered(protocol::sign_room_roles(relay, room, created_at)));
  if (parts.pins)
    out.push_back(rendered(protocol::sign_room_pins(relay, room, created_at)));
  std::vector<std::uint32_t> kinds;
  for (const auto& ev : out)
    kinds.push_back(ev.ev.kind);
  retire_state(c, community_id, relay.public_key(), room.id, kinds);
  for (const auto& ev : out)
    insert_event(c, community_id, ev);
  set_room_clock(c, community_id, room.id, created_at);
  return out;
}

room_store::room_store(pg_connection& connection, const protocol::key_pair& relay_key)
  : connection_(connection), keys_(relay_key) {}

namespace {

/// A room's invite code admits a join while its 9009 is stored and unexpired and while whoever
/// made it may still make codes in the room: a room admin demoted, removed or banned takes
/// their codes' power with them, as a community invite's minter does (minter_may_invite). It
/// never admits someone a moderator removed from the room (room_removals).
bool code_admits(pg_connection& c, const std::string& community, std::int64_t community_id,
                 const room_state& room, const protocol::room_request& request, std::int64_t now) {
  if (request.code.empty() || request.action != protocol::room_action::join)
    return false;
  auto found = must(c.exec("SELECT encode(i.created_by, 'hex'),"
                           " EXISTS (SELECT 1 FROM banned_pubkeys b WHERE b.community_id = i.community_id"
                           "   AND b.pubkey = i.created_by),"
                           " EXISTS (SELECT 1 FROM room_removals r WHERE r.community_id = i.community_id"
                           "   AND r.room_id = i.room_id AND r.pubkey = $5::bytea)"
                           " FROM room_invites i WHERE i.community_id = $1::bigint AND i.room_id = $2"
                           " AND i.code_hash = $3 AND (i.expires_at IS NULL OR i.expires_at > $4::bigint)",
                           {community, request.room, invite_code_hash(request.code), std::to_string(now),
                            bytea_param(request.subject)}),
                    "find invite");
  if (found.rows() == 0 || found.text(0, 1) == "t" || found.text(0, 2) == "t")
    return false;
  auto minter = protocol::array_from_hex<32>(found.text(0, 0));
  if (!minter) // a code stored before its maker was recorded: no role to lose
    return true;
  return protocol::room_action_allowed(protocol::room_action::create_invite,
                                       protocol::rank_in(protocol::find_member(room, *minter)),
                                       standing_of(c, community_id, *minter));
}

/// A removal by someone else (a moderator's 9001) is remembered for code_admits; an add (9000)
/// forgets it.
void remember_removal(pg_connection& c, const std::string& community, const protocol::room_request& request) {
  using protocol::room_action;
  const bool removed = request.action == room_action::remove_user && request.subject != request.author;
  if (!removed && request.action != room_action::put_user)
    return;
  must(c.exec(removed ? "INSERT INTO room_removals (community_id, room_id, pubkey)"
                        " VALUES ($1::bigint, $2, $3::bytea) ON CONFLICT DO NOTHING"
                      : "DELETE FROM room_removals WHERE community_id = $1::bigint AND room_id = $2"
                        " AND pubkey = $3::bytea",
              {community, request.room, bytea_param(request.subject)}),
       "remember removal");
}

/// Whether the request's author is banned, or the user a join or put would add (a banned user
/// may still leave, or be removed).
bool banned_from_rooms(pg_connection& c, const std::string& community, const protocol::room_request& request) {
  using protocol::room_action;
  if (request.action == room_action::leave || request.action == room_action::remove_user)
    return false;
  bool adds = request.action == room_action::join || request.action == room_action::put_user;
  const auto& added = adds ? request.subject : request.author;
  return row_exists(c, "SELECT 1 FROM banned_pubkeys WHERE community_id = $1::bigint"
                   " AND pubkey IN ($2::bytea, $3::bytea)",
                {community, bytea_param(request.author), bytea_param(added)}, "find bans");
}

/// A room's relay-signed state as the batch's requests leave it, signed once at its end: a
/// burst of joins to a big room must not sign (and store, and retire) its 39002 per join.
struct pending_state {
  room_state after;
  protocol::room_parts parts;
  std::int64_t created_at = 0;
  std::size_t write = 0;    ///< the request whose events it joins
  std::size_t position = 0; ///< where in them: after the request, before a relay 9000/9001
};

/// What the requests of one transaction share.
struct batch_context {
  /// The second each room was signed at by this transaction: later requests sign at it too.
  std::unordered_map<std::string, std::int64_t> signed_at;
  std::unordered_map<std::string, pending_state> pending;
  std::size_t current = 0; ///< the index of the request being applied
  std::set<protocol::bytes32> own_keys; ///< the relay's keys in this community (community_keys::own_keys)
};

/// Collects what `plan` rewrites of its room's state, for write_pending.
void defer_state(batch_context& batch, const protocol::room_plan& plan, const std::string& room,
                 std::int64_t created_at, std::size_t position) {
  auto& pending = batch.pending[room];
  pending.parts |= plan.parts;
  pending.after = plan.after;
  pending.created_at = created_at;
  pending.write = batch.current;
  pending.position = position;
}

/// One request, inside its transaction (the batch signs the rooms' state and notes the access
/// change). Throws statement_failed or room_must_wait.
room_write apply_locked(pg_connection& c, const protocol::key_pair& relay,
                        std::int64_t community_id, const room_command& command, std::int64_t now,
                        batch_context& batch) {
  const std::string community = std::to_string(community_id);
  const auto& request = command.request;
  auto locked = must(c.exec("SELECT access, archived_at IS NOT NULL FROM communities"
                            " WHERE id = $1::bigint FOR NO KEY UPDATE",
                            {community}),
                     "lock community");
  if (locked.rows() == 0)
    throw statement_failed("community " + community + " does not exist");
  // After the row lock, as every other holder takes them: a lock order of their own would not
  // make a cycle with the batches, which take this lock first and the row only in KEY SHARE.
  share_community_events(c, community_id);
  room_write out;
  out.committed = true;
  if (row_exists(c, "SELECT 1 FROM events WHERE community_id = $1::bigint AND id = $2::bytea",
             {community, bytea_param(command.ev.id)}, "find request")) {
    out.outcome = room_outcome::already_processed;
    return out;
  }
  // A deleted request (NIP-09, a 9005) would otherwise be applied again when sent again. Only a
  // deletion by its own author counts (a 9005 records the author too): anyone may send a kind 5
  // naming ids they can predict (welshman's room requests carry no nonce), and it is remembered.
  if (row_exists(c, "SELECT 1 FROM deleted_events WHERE community_id = $1::bigint AND event_id = $2::bytea"
                    " AND pubkey = $3::bytea",
             {community, bytea_param(command.ev.id), bytea_param(command.ev.pubkey)}, "find deleted request")) {
    out.outcome = room_outcome::deleted;
    return out;
  }
  // NIP-62: nothing its author signed up to the line they drew comes back, a room request either.
  if (row_exists(c, "SELECT 1 FROM vanished WHERE community_id = $1::bigint AND pubkey = $2::bytea"
                    " AND until >= $3::bigint",
             {community, bytea_param(command.ev.pubkey), std::to_string(command.ev.created_at)},
             "find request to vanish")) {
    out.outcome = room_outcome::vanished;
    return out;
  }
  // Decided here, under the lock, as membership writes decide theirs: the connection's look at
  // its pod's cache may be older than a ban or an archive that came while the request waited.
  if (locked.text(0, 1) == "t") {
    out.outcome = room_outcome::archived;
    return out;
  }
  if (banned_from_rooms(c, community, request)) {
    out.outcome = room_outcome::banned;
    return out;
  }
  room_state before = read_room(c, community_id, request.room);
  protocol::room_context context;
  context.actor = standing_of(c, community_id, request.author);
  context.subject = request.subject == request.author ? context.actor
                                                      : standing_of(c, community_id, request.subject);
  context.closed_community = locked.text(0, 0) == "closed";
  context.code_valid = code_admits(c, community, community_id, before, request, now);
  auto plan = protocol::plan_room_change(before, request, context);
  out.outcome = plan.outcome;
  // Removed after they left (a moderator's 9001 for someone no longer in the room): their code
  // must not let them back either.
  if (plan.outcome == room_outcome::not_member && request.action == protocol::room_action::remove_user)
    remember_removal(c, community, request);
  if (plan.outcome != room_outcome::changed)
    return out;
  if (auto bound = check_bounds(c, community_id, plan, before, request.room)) {
    out.outcome = *bound;
    return out;
  }
  // Exclusive, as a room's deletion takes it: a batch in flight read the room's writers under it.
  if (protocol::takes_posting_away(before, plan, request.action))
    lock_community_events(c, community_id);
  std::int64_t newest = room_clock(c, community_id, request.room);
  // protocol::sign_room_deletion: a deletion no newer than the room's state gets the relay's own.
  const bool relay_deletes = plan.deleted && command.ev.created_at <= newest;
  bool signs = plan.parts.any() || plan.relay_signs != 0 || relay_deletes;
  auto earlier = batch.signed_at.find(request.room);
  bool same_batch = earlier != batch.signed_at.end() && earlier->second == newest;
  if (signs && newest >= now && !same_batch)
    throw room_must_wait{newest + 1};
  std::int64_t created_at = same_batch ? newest : std::max(now, newest + 1);
  if (signs) {
    batch.signed_at[request.room] = created_at;
    set_room_clock(c, community_id, request.room, created_at);
  }

  if (request.action == protocol::room_action::create_room)
    must(c.exec("INSERT INTO rooms (community_id, room_id, name, created_by)"
                " VALUES ($1::bigint, $2, $3, $4::bytea)",
                {community, request.room, plan.after.meta.name, bytea_param(request.author)}),
         "create room");
  if (plan.deleted) {
    delete_room(c, relay, community_id, request.room);
    batch.pending.erase(request.room); // what earlier requests changed went with it
  }
  // A deletion of nothing and a code that exists already are no-ops: nothing is written (nothing
  // was before these statements).
  if (request.action == protocol::room_action::delete_event
      && delete_room_events(c, community_id, request.room, request.targets, batch.own_keys, request.author) == 0) {
    out.outcome = room_outcome::nothing_to_do;
    return out;
  }
  // The code lives as long as the 9009 stored below: its deletion revokes it (a trigger,
  // migration 32), its NIP-40 expiration ends it.
  if (plan.store_invite
      && must(c.exec("INSERT INTO room_invites (community_id, room_id, code_hash, created_by,"
                     " event_id, expires_at) VALUES ($1::bigint, $2, $3, $4::bytea, $5::bytea,"
                     " $6::bigint) ON CONFLICT DO NOTHING",
                     {community, request.room, invite_code_hash(request.code),
                      bytea_param(request.author), bytea_param(command.ev.id),
                      expiry_param(command.ev)}),
              "store invite")
             .affected_rows()
           == 0) {
    out.outcome = room_outcome::nothing_to_do;
    return out;
  }
  if (plan.parts.metadata)
    write_metadata(c, community_id, plan.after);
  if (!plan.deleted) {
    write_members(c, community_id, before, plan.after);
    remember_removal(c, community, request);
  }

  if (protocol::request_event_kept(request)) {
    relay_signed_event stored_request{command.ev, command.json};
    insert_event(c, community_id, stored_request);
    out.events.push_back(std::move(stored_request));
  }
  if (relay_deletes) {
    auto record = rendered(protocol::sign_room_deletion(relay, request.room, created_at));
    insert_event(c, community_id, record);
    out.events.push_back(std::move(record));
  }
  if (plan.parts.any())
    defer_state(batch, plan, request.room, created_at, out.events.size());
  if (plan.relay_signs != 0) {
    auto record = rendered(protocol::sign_room_member_change(relay, plan.relay_signs, request.room,
                                                             request.subject, created_at));
    insert_event(c, community_id, record);
    out.events.push_back(std::move(record));
  }
  return out;
}

/// Signs and stores each room's state as the batch left it, once, among the events of the last
/// request that changed it.
void write_pending(pg_connection& c, const protocol::key_pair& relay, std::int64_t community_id,
                   batch_context& batch, std::vector<room_write>& writes) {
  for (auto& [room, pending] : batch.pending) {
    auto state = write_state(c, relay, community_id, pending.after, pending.parts, pending.created_at);
    auto& events = writes.at(pending.write).events;
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(pending.position), state.begin(), state.end());
  }
}

} // namespace

room_batch_write room_store::apply_batch(std::int64_t community_id,
                                         const std::vector<room_command>& commands,
                                         std::int64_t now) {
  last_error_.clear();
  return in_transaction<room_batch_write>(
    connection_, "the room's state of this second is written; waiting",
    [&] {
      room_batch_write out;
      batch_context batch;
      const auto& key = keys_.of(connection_, community_id);
      batch.own_keys = keys_.own_keys(connection_, community_id);
      for (const auto& command : commands) {
        batch.current = out.writes.size();
        out.writes.push_back(apply_locked(connection_, key, community_id, command, now, batch));
      }
      write_pending(connection_, key, community_id, batch, out.writes);
      auto changed = [](const room_write& w) { return w.outcome == room_outcome::changed; };
      if (std::ranges::any_of(out.writes, changed)) {
        std::vector<relay_signed_event> written;
        for (const auto& write : out.writes)
          written.insert(written.end(), write.events.begin(), write.events.end());
        auto version = noted_change(connection_, community_id, written);
        for (auto& write : out.writes)
          if (changed(write))
            write.state_version = version;
      }
      return out;
    },
    &last_error_);
}

room_write room_store::apply(std::int64_t community_id, const room_command& command,
                             std::int64_t now) {
  auto batch = apply_batch(community_id, {command}, now);
  if (batch.writes.empty()) {
    room_write out;
    out.error = std::move(batch.error);
    out.retry_at = batch.retry_at;
    return out;
  }
  return std::move(batch.writes.front());
}

} // namespace comb::storage
