// SPDX-License-Identifier: MIT
#include "admin/import_rooms.hpp"

#include <algorithm>
#include <map>

#include "admin/import_members.hpp"
#include "admin/jsonl_reader.hpp"
#include "protocol/hex.hpp"
#include "protocol/room.hpp"
#include "storage/membership_store.hpp"
#include "storage/room_store.hpp"

namespace comb::admin {
namespace {

/// A room state write waits at most this many seconds in all (a room id's state of this second).
constexpr int max_waits = 5;

bool is_room_state(std::uint32_t kind) {
  return kind == protocol::room_metadata_kind || kind == protocol::room_admins_kind
         || kind == protocol::room_members_kind || kind == protocol::room_pins_kind;
}

/// The first value of the tag named `name`, or "".
std::string tag_value(const protocol::event& ev, std::string_view name) {
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == name)
      return t[1];
  return {};
}

bool has_flag(const protocol::event& ev, std::string_view name) {
  for (const auto& t : ev.tags)
    if (!t.empty() && t[0] == name)
      return true;
  return false;
}

std::vector<protocol::bytes32> p_pubkeys(const protocol::event& ev) {
  std::vector<protocol::bytes32> out;
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == "p")
      if (auto pubkey = protocol::array_from_hex<32>(t[1]))
        out.push_back(*pubkey);
  return out;
}

/// comb's room roles a 39001 gives `pubkey` (another relay's other roles mean nothing here).
std::vector<std::string> roles_of(const protocol::event* admins, const protocol::bytes32& pubkey) {
  std::vector<std::string> roles;
  if (!admins)
    return roles;
  const auto hex = protocol::to_hex(pubkey);
  for (const auto& t : admins->tags) {
    if (t.size() < 3 || t[0] != "p" || t[1] != hex)
      continue;
    for (std::size_t i = 2; i < t.size(); ++i)
      if ((t[i] == protocol::room_admin_role || t[i] == protocol::room_moderator_role)
          && std::find(roles.begin(), roles.end(), t[i]) == roles.end())
        roles.push_back(t[i]);
  }
  return roles;
}

std::vector<protocol::tag> pins_of(const protocol::event* pins) {
  std::vector<protocol::tag> out;
  if (!pins)
    return out;
  for (const auto& t : pins->tags)
    if (t.size() >= 2 && (t[0] == "e" || t[0] == "a") && out.size() < protocol::max_room_pins)
      out.push_back(t);
  return out;
}

/// The newest state events of `relay` in the file, one per room id and kind (so memory follows
/// the rooms, not the lines), each line checked like any other.
std::vector<protocol::event> state_events(std::FILE* file, const import_policy& policy,
                                          const protocol::bytes32& relay) {
  std::map<std::pair<std::string, std::uint32_t>, protocol::event> newest;
  jsonl_reader reader(file, policy.limits.max_message_bytes);
  jsonl_line line;
  while (reader.next(line)) {
    auto ev = read_event_line(line.text, policy);
    if (!ev || !is_room_state(ev->kind) || ev->pubkey != relay)
      continue;
    if (policy.check_signatures && protocol::verify_event(ev.value()))
      continue;
    auto id = tag_value(ev.value(), "d");
    if (!protocol::valid_room_id(id))
      continue;
    auto [it, fresh] = newest.try_emplace({id, ev->kind}, ev.value());
    if (!fresh && newer_version(ev.value(), it->second))
      it->second = std::move(ev.value());
  }
  std::vector<protocol::event> out;
  for (auto& [key, ev] : newest)
    out.push_back(std::move(ev));
  return out;
}

} // namespace

std::vector<protocol::room_state> rooms_of_state(const std::vector<protocol::event>& events,
                                                 const protocol::bytes32& relay) {
  // By room id, then kind: the newest version.
  std::map<std::string, std::map<std::uint32_t, const protocol::event*>> newest;
  for (const auto& ev : events) {
    if (ev.pubkey != relay || !is_room_state(ev.kind))
      continue;
    auto id = tag_value(ev, "d");
    if (!protocol::valid_room_id(id))
      continue;
    auto& kept = newest[id][ev.kind];
    if (!kept || newer_version(ev, *kept))
      kept = &ev;
  }
  std::vector<protocol::room_state> rooms;
  for (const auto& [id, by_kind] : newest) {
    auto find = [&by_kind](std::uint32_t kind) -> const protocol::event* {
      auto it = by_kind.find(kind);
      return it == by_kind.end() ? nullptr : it->second;
    };
    const auto* metadata = find(protocol::room_metadata_kind);
    if (!metadata)
      continue;
    protocol::room_state room;
    room.exists = true;
    room.id = id;
    room.meta.name = tag_value(*metadata, "name");
    room.meta.about = tag_value(*metadata, "about");
    room.meta.picture = tag_value(*metadata, "picture");
    room.meta.flags = {has_flag(*metadata, "private"), has_flag(*metadata, "restricted"),
                       has_flag(*metadata, "hidden"), has_flag(*metadata, "closed")};
    if (const auto* members = find(protocol::room_members_kind))
      for (const auto& pubkey : p_pubkeys(*members))
        room.members.push_back({pubkey, roles_of(find(protocol::room_admins_kind), pubkey)});
    room.pins = pins_of(find(protocol::room_pins_kind));
    rooms.push_back(std::move(room));
  }
  return rooms;
}

std::optional<std::size_t> rooms_from_state(std::FILE* file, const import_policy& policy,
                                            const std::optional<protocol::bytes32>& list_author,
                                            const admin_options& options, admin_session& session,
                                            const storage::community_row& community,
                                            reporter& out) {
  // The file is read again for the state, wherever it is: a pipe cannot be.
  if (std::fseek(file, 0, SEEK_SET) != 0) {
    out.fail(exit_code::usage, "--rooms-from-state needs a file it can read again (--in FILE)");
    return std::nullopt;
  }
  if (!list_author) {
    (void)relay_list(file, policy, std::nullopt, "--rooms-from-state", out); // names the authors
    return std::nullopt;
  }
  const protocol::bytes32& relay = *list_author;
  auto events = state_events(file, policy, relay);
  if (std::fseek(file, 0, SEEK_SET) != 0) {
    out.fail(exit_code::usage, "cannot read the file again after looking for the room state");
    return std::nullopt;
  }
  auto rooms = rooms_of_state(events, relay);
  if (rooms.empty()) {
    out.note("--rooms-from-state: the file holds no room state of relay " + protocol::to_hex(relay));
    return std::size_t{0};
  }
  auto key = load_key(options, out);
  if (!key)
    return std::nullopt;
  auto restore = storage::restore_rooms(session.connection, *key, community.id, rooms, unix_now());
  for (int wait = 0; !restore.committed && restore.retry_at != 0 && wait < max_waits; ++wait)
    restore = storage::restore_rooms(session.connection, *key, community.id, rooms,
                                     sleep_until_database_second(restore.retry_at));
  if (!restore.committed) {
    out.fail(exit_code::database, "database error, no room created: " + restore.error);
    return std::nullopt;
  }
  out.note("--rooms-from-state: " + std::to_string(rooms.size()) + " rooms in the file; created "
           + std::to_string(restore.restored) + ", already here "
           + std::to_string(restore.existing) + ", left out past the bounds "
           + std::to_string(restore.rooms_left_out) + "; room members left out (not members of"
           " this closed community, or past the bound) "
           + std::to_string(restore.members_left_out));
  out.fields()["rooms_left_out"] = restore.rooms_left_out;
  out.fields()["room_members_left_out"] = restore.members_left_out;
  return restore.restored;
}

} // namespace comb::admin
