// SPDX-License-Identifier: MIT
// comb-admin community create|list|archive|unarchive|delete|add-host|set-access|set-info
#include <boost/json/array.hpp>
#include <sstream>

#include "admin/commands.hpp"
#include "admin/membership_change.hpp"
#include "protocol/hex.hpp"
#include "protocol/nip86.hpp"
#include "storage/membership_store.hpp"

namespace comb::admin {
namespace {

using storage::lifecycle_result;

struct community_args {
  std::string host;
  std::string owner;
  std::string alias;
  std::string access;
  bool closed = false;
  storage::community_info_update info; ///< set-info: only the options given
};

/// Reports a lifecycle change: `done` when it changed something, `already` (a conflict) when
/// the community was already in that state.
int report_lifecycle(lifecycle_result result, const storage::community_store& store,
                     const std::string& done, const std::string& already, reporter& out) {
  switch (result) {
    case lifecycle_result::changed: out.say(done); return as_int(exit_code::ok);
    case lifecycle_result::unchanged:
    case lifecycle_result::host_exists:
      return out.fail(exit_code::conflict, "conflict: " + already);
    case lifecycle_result::not_found:
      return out.fail(exit_code::not_found, "not found: the community no longer exists");
    case lifecycle_result::forbidden: // only for a NIP-86 caller; comb-admin names none
    case lifecycle_result::archived:
      return out.fail(exit_code::not_allowed, "not allowed: the caller no longer manages it");
    case lifecycle_result::failed: break;
  }
  return out.fail(exit_code::database, "database error: " + store.last_error());
}

int run_create(const admin_options& options, const community_args& args, reporter& out) {
  auto host = parse_host(args.host, out);
  auto owner = host ? parse_pubkey(args.owner, out) : std::nullopt;
  auto key = owner ? load_key(options, out) : std::nullopt;
  auto session = key ? open_session(options, out) : nullptr;
  if (!session)
    return out.failed_code();
  storage::membership_store store(session->connection, *key);
  auto created = store.create_community_with_owner(*host, *owner, args.closed, unix_now());
  using status = storage::community_creation::status;
  if (created.result == status::host_exists)
    return out.fail(exit_code::conflict, "conflict: host " + *host + " already serves a community");
  if (created.result != status::created)
    return out.fail(exit_code::database, "database error, nothing created: " + store.last_error());
  describe_community(*created.community, out);
  out.fields()["access"] = args.closed ? "closed" : "open";
  out.fields()["owner"] = protocol::to_hex(*owner);
  out.say("created community " + *host + " (id " + std::to_string(created.community->id) + ", "
          + (args.closed ? "closed" : "open") + ")");
  storage::membership_command provision{storage::membership_change::provision_owner, *owner,
                                        storage::member_role::owner, std::nullopt, {}, "operator",
                                        std::nullopt, std::nullopt, {}};
  return report_write(options, *created.community, provision, created.write, out);
}

std::string joined(const std::vector<std::string>& hosts) {
  std::string out;
  for (const auto& host : hosts)
    out += (out.empty() ? "" : ",") + host;
  return out.empty() ? "-" : out;
}

int run_list(const admin_options& options, const community_args&, reporter& out) {
  auto session = open_session(options, out);
  if (!session)
    return out.failed_code();
  auto all = session->communities.list_all();
  if (!all)
    return out.fail(exit_code::database, "database error: " + session->communities.last_error());
  boost::json::array rows;
  out.say("ID\tHOST\tACCESS\tARCHIVED\tMEMBERS\tALIASES");
  for (const auto& c : *all) {
    boost::json::array aliases(c.aliases.begin(), c.aliases.end());
    rows.push_back({{"id", c.row.id}, {"host", c.row.host},
                    {"access", c.row.closed ? "closed" : "open"}, {"archived", c.row.archived},
                    {"member_count", c.member_count}, {"aliases", std::move(aliases)}});
    std::ostringstream line;
    line << c.row.id << '\t' << c.row.host << '\t' << (c.row.closed ? "closed" : "open") << '\t'
         << (c.row.archived ? "yes" : "no") << '\t' << c.member_count << '\t' << joined(c.aliases);
    out.say(line.str());
  }
  out.fields()["communities"] = std::move(rows);
  return as_int(exit_code::ok);
}


int run_archive(const admin_options& options, const community_args& args, reporter& out,
                bool archive) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    out.fields()["archived"] = archive;
    auto state = archive ? std::string("archived") : std::string("not archived");
    return report_lifecycle(s.communities.set_archived(c.id, archive), s.communities,
                            (archive ? "archived " : "unarchived ") + c.host,
                            c.host + " is already " + state, out);
  });
}

int run_delete(const admin_options& options, const community_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    return report_lifecycle(s.communities.remove(c.id), s.communities,
                            "deleted " + c.host + " with its hosts, members, events and invites",
                            "", out);
  });
}

int run_add_host(const admin_options& options, const community_args& args, reporter& out) {
  auto alias = parse_host(args.alias, out);
  if (!alias)
    return out.failed_code();
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    out.fields()["alias"] = *alias;
    auto holder = s.communities.find_by_host(*alias);
    auto taken = "host " + *alias + " already serves " + (holder ? holder->host : "a community");
    return report_lifecycle(s.communities.add_host(c.id, *alias), s.communities,
                            c.host + " now also answers to " + *alias, taken, out);
  });
}

/// Switches access, waiting for the next second while a room's state already has this one
/// (closing rewrites the state of the rooms non-members leave).
storage::access_switch switch_access_paced(storage::community_store& store, std::int64_t id,
                                           bool closed, const protocol::key_pair& key) {
  auto now = unix_now();
  for (;;) {
    auto done = store.set_access(id, closed, key, now);
    if (done.retry_at == 0)
      return done;
    now = sleep_until_database_second(done.retry_at);
  }
}

int run_set_access(const admin_options& options, const community_args& args, reporter& out) {
  auto key = load_key(options, out);
  if (!key)
    return out.failed_code();
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    out.fields()["access"] = args.access;
    auto done = switch_access_paced(s.communities, c.id, args.access == "closed", *key);
    out.fields()["room_events"] = static_cast<std::int64_t>(done.room_events.size());
    auto removed = done.room_events.empty()
                     ? std::string()
                     : " (non-members left its rooms: " + std::to_string(done.room_events.size())
                         + " room state events rewritten)";
    return report_lifecycle(done.result, s.communities, c.host + " is now " + args.access + removed,
                            c.host + " is already " + args.access, out);
  });
}

/// Why a set-info value cannot be served in NIP-11, or "" (the bounds NIP-86 applies too).
std::string info_problem(const storage::community_info_update& info) {
  if (!info.name && !info.description && !info.icon)
    return "give at least one of --name, --description, --icon";
  if (info.name && info.name->size() > protocol::max_relay_name_bytes)
    return "--name is longer than " + std::to_string(protocol::max_relay_name_bytes) + " bytes";
  if (info.description && info.description->size() > protocol::max_relay_description_bytes)
    return "--description is longer than "
           + std::to_string(protocol::max_relay_description_bytes) + " bytes";
  if (info.icon && !info.icon->empty() && !info.icon->starts_with("https://")
      && !info.icon->starts_with("http://"))
    return "--icon must be an http(s) URL (or \"\" to clear it)";
  if (info.icon && info.icon->size() > protocol::max_relay_icon_bytes)
    return "--icon is longer than " + std::to_string(protocol::max_relay_icon_bytes) + " bytes";
  return "";
}

int run_set_info(const admin_options& options, const community_args& args, reporter& out) {
  if (auto problem = info_problem(args.info); !problem.empty())
    return out.fail(exit_code::usage, "usage: " + problem);
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    for (const auto& [field, value] : {std::pair{"name", &args.info.name},
                                       std::pair{"description", &args.info.description},
                                       std::pair{"icon", &args.info.icon}})
      if (*value)
        out.fields()[field] = **value;
    return report_lifecycle(s.communities.set_info(c.id, args.info), s.communities,
                            "updated the NIP-11 info of " + c.host,
                            c.host + " already has this info", out);
  });
}

/// `--NAME VALUE` that sets `target` only when given ("" clears the field).
void info_option(CLI::App* command, const std::string& name, std::optional<std::string>& target,
                 const std::string& help) {
  command->add_option_function<std::string>(
    "--" + name, [&target](const std::string& value) { target = value; }, help);
}

CLI::App* with_host(CLI::App* command, community_args& args) {
  command->add_option("HOST", args.host, "a host of the community")->required();
  return command;
}

} // namespace

void add_community_commands(CLI::App& app, admin_cli& cli) {
  auto* group = app.add_subcommand("community", "create, list, archive and delete communities");
  group->require_subcommand(1);
  auto args = std::make_shared<community_args>();
  auto* create = with_host(group->add_subcommand("create", "create a community with its owner"),
                           *args);
  create->add_option("--owner", args->owner, "the owner's public key (hex or npub)")->required();
  create->add_flag("--closed", args->closed, "closed access: only members read and write");
  on_run(create, cli, args, run_create);
  on_run(group->add_subcommand("list", "list every community"), cli, args, run_list);
  on_run(with_host(group->add_subcommand("archive", "refuse connections, keep the data"), *args),
         cli, args, [](auto& o, auto& a, auto& out) { return run_archive(o, a, out, true); });
  on_run(with_host(group->add_subcommand("unarchive", "serve an archived community again"), *args),
         cli, args, [](auto& o, auto& a, auto& out) { return run_archive(o, a, out, false); });
  on_run(with_host(group->add_subcommand("delete", "delete a community and all its data"), *args),
         cli, args, run_delete);
  auto* add_host = with_host(group->add_subcommand("add-host", "add a further host name"), *args);
  add_host->add_option("ALIAS", args->alias, "the new host name")->required();
  on_run(add_host, cli, args, run_add_host);
  auto* access = with_host(group->add_subcommand("set-access", "switch open or closed"), *args);
  access->add_option("ACCESS", args->access, "open or closed")
    ->required()
    ->check(CLI::IsMember({"open", "closed"}));
  on_run(access, cli, args, run_set_access);
  auto* info = with_host(group->add_subcommand("set-info", "set the NIP-11 name, description, icon"),
                         *args);
  info_option(info, "name", args->info.name, "the community's name (\"\" clears it)");
  info_option(info, "description", args->info.description, "its description (\"\": none, not the deployment's)");
  info_option(info, "icon", args->info.icon, "an http(s) URL of its icon (\"\" clears it)");
  on_run(info, cli, args, run_set_info);
}

} // namespace comb::admin
