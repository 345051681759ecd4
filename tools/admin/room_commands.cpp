// SPDX-License-Identifier: MIT
// comb-admin room list|members: a community's NIP-29 rooms and who is in them (read only;
// rooms change through their signed requests, in the relay).
#include <boost/json/array.hpp>

#include "admin/commands.hpp"
#include "protocol/hex.hpp"
#include "storage/room_store.hpp"

namespace comb::admin {
namespace {

struct room_args {
  std::string host;
  std::string room;
};

std::string flags_of(const protocol::room_flags& flags) {
  std::string out;
  for (auto [on, name] : {std::pair{flags.is_private, "private"}, {flags.restricted, "restricted"},
                          {flags.hidden, "hidden"}, {flags.closed, "closed"}})
    if (on)
      out += (out.empty() ? "" : ",") + std::string(name);
  return out.empty() ? "-" : out;
}

std::optional<std::vector<protocol::room_state>> rooms_of(admin_session& s,
                                                          const storage::community_row& c,
                                                          reporter& out) {
  auto rooms = storage::load_rooms(s.connection, c.id);
  if (!rooms)
    out.fail(exit_code::database, "database error: cannot read the rooms");
  return rooms;
}

int run_list(const admin_options& options, const room_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    auto rooms = rooms_of(s, c, out);
    if (!rooms)
      return out.failed_code();
    boost::json::array rows;
    for (const auto& room : *rooms) {
      rows.push_back({{"id", room.id}, {"name", room.meta.name}, {"flags", flags_of(room.meta.flags)},
                      {"members", room.members.size()}});
      out.say(terminal_safe(room.id) + '\t' + std::to_string(room.members.size()) + '\t'
              + flags_of(room.meta.flags) + '\t' + terminal_safe(room.meta.name));
    }
    out.fields()["rooms"] = std::move(rows);
    return as_int(exit_code::ok);
  });
}

int run_members(const admin_options& options, const room_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    auto rooms = rooms_of(s, c, out);
    if (!rooms)
      return out.failed_code();
    auto it = std::find_if(rooms->begin(), rooms->end(), [&](const auto& r) { return r.id == args.room; });
    if (it == rooms->end())
      return out.fail(exit_code::not_found, "no room " + args.room + " in " + c.host);
    boost::json::array rows;
    for (const auto& m : it->members) {
      auto hex = protocol::to_hex(m.pubkey);
      boost::json::array roles;
      std::string joined;
      for (const auto& role : m.roles) {
        roles.push_back(boost::json::value(role));
        joined += (joined.empty() ? "" : ",") + role;
      }
      rows.push_back({{"pubkey", hex}, {"npub", npub_of(m.pubkey)}, {"roles", std::move(roles)}});
      out.say((joined.empty() ? "-" : joined) + '\t' + hex + '\t' + npub_of(m.pubkey));
    }
    out.fields()["room"] = args.room;
    out.fields()["members"] = std::move(rows);
    return as_int(exit_code::ok);
  });
}

} // namespace

void add_room_commands(CLI::App& app, admin_cli& cli) {
  auto* group = app.add_subcommand("room", "list a community's rooms (NIP-29) and their members");
  group->require_subcommand(1);
  auto args = std::make_shared<room_args>();
  auto* list = group->add_subcommand("list", "the rooms: id, members, flags, name");
  list->add_option("HOST", args->host, "a host of the community")->required();
  on_run(list, cli, args, run_list);
  auto* members = group->add_subcommand("members", "a room's members and their room roles");
  members->add_option("HOST", args->host, "a host of the community")->required();
  members->add_option("ROOM", args->room, "the room id (its h tag)")->required();
  on_run(members, cli, args, run_members);
}

} // namespace comb::admin
