// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

#include "admin/output.hpp"
#include "admin/session.hpp"

namespace comb::admin {

/// The parsed command line: shared options, and the action of the one command chosen. Actions
/// run after parsing, so every option (in any position) is known when they start.
struct admin_cli {
  admin_options options;
  std::function<int(reporter&)> action;
};

/// Each registers one command group on `app`; its actions read `cli.options`.
void add_community_commands(CLI::App& app, admin_cli& cli);
void add_member_commands(CLI::App& app, admin_cli& cli);
void add_invite_commands(CLI::App& app, admin_cli& cli);
void add_repair_commands(CLI::App& app, admin_cli& cli);
void add_key_commands(CLI::App& app, admin_cli& cli);
void add_cluster_commands(CLI::App& app, admin_cli& cli);
void add_export_command(CLI::App& app, admin_cli& cli);
void add_import_command(CLI::App& app, admin_cli& cli);
void add_room_commands(CLI::App& app, admin_cli& cli);

/// Makes `command`, when given, choose `run(options, args, out)` as the action. `args` is
/// shared with the option bindings, which fill it while parsing.
template <typename Args, typename Run>
void on_run(CLI::App* command, admin_cli& cli, std::shared_ptr<Args> args, Run run) {
  command->callback([&cli, args, run] {
    cli.action = [&cli, args, run](reporter& out) { return run(cli.options, *args, out); };
  });
}

/// Roles an operator may give: the owner changes only by transfer-owner.
inline const std::vector<std::string> grantable_roles{"admin", "member"};

} // namespace comb::admin
