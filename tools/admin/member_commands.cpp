// SPDX-License-Identifier: MIT
// comb-admin member add|remove|set-role|list, transfer-owner
#include <boost/json/array.hpp>

#include "admin/commands.hpp"
#include "admin/membership_change.hpp"
#include "protocol/hex.hpp"
#include "storage/membership_store.hpp"

namespace comb::admin {
namespace {

using storage::membership_change;
using storage::member_role;

struct member_args {
  std::string host;
  std::string pubkey;
  std::string role = "member";
  std::string if_role;
};

member_role role_of(const std::string& name) {
  return storage::parse_role(name).value_or(member_role::member);
}

storage::membership_command command_of(membership_change change, member_role role) {
  storage::membership_command command;
  command.change = change;
  command.role = role;
  return command;
}

/// Parses the subject, finds the community, then applies `change` to the subject.
int change_member(const admin_options& options, const member_args& args, reporter& out,
                  storage::membership_command command) {
  auto subject = parse_pubkey(args.pubkey, out);
  if (!subject)
    return out.failed_code();
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    command.subject = *subject;
    command.added_by = "operator";
    out.fields()["pubkey"] = protocol::to_hex(*subject);
    out.fields()["npub"] = npub_of(*subject);
    return apply_and_report(options, s, c, command, out);
  });
}

int run_add(const admin_options& options, const member_args& args, reporter& out) {
  out.fields()["role"] = args.role;
  return change_member(options, args, out,
                       command_of(membership_change::add_member, role_of(args.role)));
}

int run_remove(const admin_options& options, const member_args& args, reporter& out) {
  auto command = command_of(membership_change::remove_member, member_role::member);
  if (!args.if_role.empty()) {
    command.change = membership_change::remove_member_if_role;
    command.expected_role = role_of(args.if_role);
  }
  return change_member(options, args, out, command);
}

int run_set_role(const admin_options& options, const member_args& args, reporter& out) {
  out.fields()["role"] = args.role;
  return change_member(options, args, out,
                       command_of(membership_change::update_role, role_of(args.role)));
}

int run_transfer(const admin_options& options, const member_args& args, reporter& out) {
  return change_member(options, args, out,
                       command_of(membership_change::transfer_owner, member_role::owner));
}

int list_members(admin_session& session, const storage::community_row& community, reporter& out);

int run_list(const admin_options& options, const member_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    return list_members(s, c, out);
  });
}

int list_members(admin_session& session, const storage::community_row& community, reporter& out) {
  auto members = storage::load_members(session.connection, community.id);
  if (!members)
    return out.fail(exit_code::database, "database error: cannot read the members");
  boost::json::array rows;
  for (const auto& m : *members) {
    auto hex = protocol::to_hex(m.pubkey);
    auto npub = npub_of(m.pubkey);
    rows.push_back({{"pubkey", hex}, {"npub", npub}, {"role", storage::role_name(m.role)}});
    out.say(std::string(storage::role_name(m.role)) + '\t' + hex + '\t' + npub);
  }
  out.fields()["members"] = std::move(rows);
  return as_int(exit_code::ok);
}

CLI::App* with_subject(CLI::App* command, member_args& args) {
  command->add_option("HOST", args.host, "a host of the community")->required();
  command->add_option("PUBKEY", args.pubkey, "the member's public key (hex or npub)")->required();
  return command;
}

} // namespace

void add_member_commands(CLI::App& app, admin_cli& cli) {
  auto* group = app.add_subcommand("member", "add, remove, list members and set their roles");
  group->require_subcommand(1);
  auto args = std::make_shared<member_args>();
  auto* add = with_subject(group->add_subcommand("add", "add a member"), *args);
  add->add_option("--role", args->role, "admin or member (default member)")
    ->check(CLI::IsMember(grantable_roles));
  on_run(add, cli, args, run_add);
  auto* remove = with_subject(group->add_subcommand("remove", "remove a member"), *args);
  remove->add_option("--if-role", args->if_role, "remove only if the member has this role")
    ->check(CLI::IsMember(grantable_roles));
  on_run(remove, cli, args, run_remove);
  auto* set_role = with_subject(group->add_subcommand("set-role", "make admin or member"), *args);
  set_role->add_option("ROLE", args->role, "admin or member")
    ->required()
    ->check(CLI::IsMember(grantable_roles));
  on_run(set_role, cli, args, run_set_role);
  auto* list = group->add_subcommand("list", "list the members in list order");
  list->add_option("HOST", args->host, "a host of the community")->required();
  on_run(list, cli, args, run_list);
  on_run(with_subject(app.add_subcommand("transfer-owner",
                                         "make PUBKEY the owner; the old owner stays a member"),
                      *args),
         cli, args, run_transfer);
}

} // namespace comb::admin
