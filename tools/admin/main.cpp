// SPDX-License-Identifier: MIT
// comb-admin: the operator's command line. Every membership change goes through the relay's own
// storage functions (storage::membership_store), so the list is written in the same transaction.
#include <cstring>
#include <iostream>

#include "admin/commands.hpp"

namespace comb::admin {
namespace {

constexpr const char* exit_codes_footer = R"(Exit codes:
  0  ok
  1  usage or bad input (bad npub/hex, bad host, missing key file, ambiguous invite prefix)
  2  not found (unknown host, member or invite)
  3  is owner (the owner cannot be removed or demoted; use transfer-owner)
  4  role mismatch or not allowed
  5  conflict: already so (host exists, already a member, already the owner, already that
     role, already archived/unarchived/revoked, key file exists)
  6  database error
  7  verify found a community whose live member list differs from its members
With --json, each command prints one JSON object on stdout ("ok", "exit_code", "error" on
failure, and the command's fields); messages always go to stderr.)";

void add_shared_options(CLI::App& app, admin_options& options) {
  app.add_option("--database-url", options.database_url, "Postgres (libpq URI)")
    ->envname("COMB_DATABASE_URL");
  app.add_option("--data-dir", options.data_dir, "data folder, for the default key file")
    ->envname("COMB_DATA_DIR");
  app.add_option("--key-file", options.key_file,
                 "relay secret key file (default <data-dir>/relay.key)")
    ->envname("COMB_RELAY_KEY_FILE");
  app.add_option("--redis-url", options.redis_url, "Redis, to push changed lists to every pod (a password in it is better given as"
                 " COMB_REDIS_URL: a command line is visible to every user of the host)")
    ->envname("COMB_REDIS_URL");
  app.add_option("--cluster-secret", options.cluster_secret,
                 "the pods' cluster secret: live pushes carry a MAC made with it (better given as"
                 " COMB_CLUSTER_SECRET: a command line is visible to every user of the host)")
    ->envname("COMB_CLUSTER_SECRET");
  app.add_flag("--json", options.json, "one JSON object per command on stdout");
}

/// "member add", from the subcommands the parser chose.
std::string command_name(const CLI::App& app) {
  auto chosen = app.get_subcommands();
  if (chosen.empty())
    return "";
  auto rest = command_name(*chosen.front());
  return chosen.front()->get_name() + (rest.empty() ? "" : " " + rest);
}

/// Shared options are accepted after the command too ("member add H P --json").
void let_options_fall_through(CLI::App& app) {
  app.fallthrough();
  for (auto* sub : app.get_subcommands({}))
    let_options_fall_through(*sub);
}

bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0)
      return true;
  return false;
}

int run(int argc, char** argv) {
  CLI::App app{"comb-admin: manage the communities, members and invites of a comb relay",
               "comb-admin"};
  app.footer(exit_codes_footer);
  app.require_subcommand(1);
  admin_cli cli;
  add_shared_options(app, cli.options);
  add_community_commands(app, cli);
  add_member_commands(app, cli);
  add_invite_commands(app, cli);
  add_repair_commands(app, cli);
  add_key_commands(app, cli);
  add_cluster_commands(app, cli);
  add_export_command(app, cli);
  add_import_command(app, cli);
  add_room_commands(app, cli);
  let_options_fall_through(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e); // prints help (code 0) or the parse error
    if (code == 0)
      return 0;
    reporter out(wants_json(argc, argv));
    out.fields()["error"] = e.what();
    return out.finish(as_int(exit_code::usage));
  }
  reporter out(cli.options.json);
  out.fields()["command"] = command_name(app);
  return out.finish(cli.action(out));
}

} // namespace
} // namespace comb::admin

int main(int argc, char** argv) {
  try {
    return comb::admin::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "comb-admin: unexpected error: " << e.what() << '\n';
    return 6;
  }
}
