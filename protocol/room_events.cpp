// SPDX-License-Identifier: MIT
#include "protocol/room_events.hpp"

#include "protocol/canonical_json.hpp"
#include "protocol/hex.hpp"
#include "protocol/sha256.hpp"

namespace comb::protocol {
namespace {

/// The value of a record's `salt` tag, which nobody without the relay's secret can compute.
/// Without it a room record holds only known values (its room, a member, a second), so anyone
/// could compute its id and ask the relay whether it is stored (a deletion or a reaction naming
/// it): who joined a hidden room, and when. Derived from the record rather than drawn, so one
/// signed twice alike in one second keeps one id, as before.
std::string salt_of(const key_pair& relay, const event& unsalted) {
  std::string material = "comb room record salt:";
  material.append(reinterpret_cast<const char*>(relay.secret().data()), relay.secret().size());
  material.append(reinterpret_cast<const char*>(unsalted.id.data()), unsalted.id.size());
  const bytes32 digest = sha256(material);
  return to_hex(std::span<const std::uint8_t>(digest.data(), 16));
}

event sign(const key_pair& relay, std::uint32_t kind, std::vector<tag> tags,
           std::int64_t created_at) {
  event ev;
  ev.pubkey = relay.public_key();
  ev.created_at = created_at;
  ev.kind = kind;
  ev.tags = std::move(tags);
  ev.id = compute_id(ev);
  ev.tags.push_back({"salt", salt_of(relay, ev)}); // last: readers go by name, some by position
  ev.id = compute_id(ev);
  ev.sig = relay.sign(ev.id);
  return ev;
}

void add_flag(std::vector<tag>& tags, bool on, const char* name) {
  if (on)
    tags.push_back({name});
}

} // namespace

event sign_room_metadata(const key_pair& relay, const room_state& room, std::int64_t created_at) {
  std::vector<tag> tags{{"d", room.id}, {"name", room.meta.name}};
  if (!room.meta.about.empty())
    tags.push_back({"about", room.meta.about});
  if (!room.meta.picture.empty())
    tags.push_back({"picture", room.meta.picture});
  const auto& flags = room.meta.flags;
  add_flag(tags, flags.is_private, "private");
  add_flag(tags, flags.restricted, "restricted");
  add_flag(tags, flags.hidden, "hidden");
  add_flag(tags, flags.closed, "closed");
  return sign(relay, room_metadata_kind, std::move(tags), created_at);
}

event sign_room_admins(const key_pair& relay, const room_state& room, std::int64_t created_at) {
  std::vector<tag> tags{{"d", room.id}};
  for (const auto& member : room.members) {
    if (member.roles.empty())
      continue;
    tag p{"p", to_hex(member.pubkey)};
    p.insert(p.end(), member.roles.begin(), member.roles.end());
    tags.push_back(std::move(p));
  }
  return sign(relay, room_admins_kind, std::move(tags), created_at);
}

event sign_room_members(const key_pair& relay, const room_state& room, std::int64_t created_at) {
  std::vector<tag> tags{{"d", room.id}};
  for (const auto& member : room.members)
    tags.push_back({"p", to_hex(member.pubkey)});
  return sign(relay, room_members_kind, std::move(tags), created_at);
}

event sign_room_roles(const key_pair& relay, const room_state& room, std::int64_t created_at) {
  std::vector<tag> tags{
    {"d", room.id},
    {"role", std::string(room_admin_role), "edits the room, grants roles, removes members, deletes the room"},
    {"role", std::string(room_moderator_role), "deletes events, adds and removes members"},
  };
  return sign(relay, room_roles_kind, std::move(tags), created_at);
}

event sign_room_pins(const key_pair& relay, const room_state& room, std::int64_t created_at) {
  std::vector<tag> tags{{"d", room.id}};
  tags.insert(tags.end(), room.pins.begin(), room.pins.end());
  return sign(relay, room_pins_kind, std::move(tags), created_at);
}

event sign_room_member_change(const key_pair& relay, std::uint32_t kind, const std::string& room,
                              const bytes32& subject, std::int64_t created_at) {
  return sign(relay, kind, {{"h", room}, {"p", to_hex(subject)}}, created_at);
}

event sign_room_deletion(const key_pair& relay, const std::string& room, std::int64_t created_at) {
  return sign(relay, room_delete_kind, {{"h", room}}, created_at);
}

} // namespace comb::protocol
