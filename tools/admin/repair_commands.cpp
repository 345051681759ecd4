// SPDX-License-Identifier: MIT
// comb-admin republish-members, verify: repairing and checking the NIP-43 invariant
#include <boost/json/array.hpp>

#include "admin/commands.hpp"
#include "admin/membership_change.hpp"
#include "storage/membership_store.hpp"

namespace comb::admin {
namespace {

struct repair_args {
  std::string host;
};

int run_republish(const admin_options& options, const repair_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    storage::membership_command republish;
    republish.change = storage::membership_change::republish;
    republish.added_by = "operator";
    return apply_and_report(options, s, c, republish, out);
  });
}

/// The communities to check: the one of `host`, or all of them.
std::optional<std::vector<storage::community_row>> communities_to_verify(admin_session& session,
                                                                         const std::string& host,
                                                                         reporter& out) {
  if (!host.empty()) {
    auto community = find_community(session, host, out);
    if (!community)
      return std::nullopt;
    return std::vector{*community};
  }
  auto all = session.communities.list_all();
  if (!all) {
    out.fail(exit_code::database, "database error: " + session.communities.last_error());
    return std::nullopt;
  }
  std::vector<storage::community_row> rows;
  for (const auto& summary : *all)
    rows.push_back(summary.row);
  return rows;
}

int run_verify(const admin_options& options, const repair_args& args, reporter& out) {
  auto key = load_key(options, out);
  auto session = key ? open_session(options, out) : nullptr;
  if (!session)
    return out.failed_code();
  auto communities = communities_to_verify(*session, args.host, out);
  if (!communities)
    return out.failed_code();
  storage::membership_store store(session->connection, *key);
  boost::json::array checked, differing;
  for (const auto& c : *communities) {
    auto check = store.verify(c.id);
    if (!store.last_error().empty())
      return out.fail(exit_code::database, "database error verifying " + c.host + ": "
                                             + store.last_error());
    checked.push_back({{"host", c.host}, {"community_id", c.id}, {"matches", check.matches},
                       {"detail", check.detail}});
    if (check.matches)
      out.say("ok\t" + c.host + "\t" + check.detail);
    else {
      differing.push_back(boost::json::string(c.host));
      out.say("DIFFERS\t" + c.host + "\t" + check.detail);
    }
  }
  out.fields()["communities"] = std::move(checked);
  std::string names;
  for (const auto& host : differing)
    names += (names.empty() ? "" : ", ") + std::string(host.as_string());
  out.fields()["differing"] = std::move(differing);
  if (!names.empty())
    return out.fail(exit_code::differences,
                    "the live member list differs from the stored members in: " + names
                      + " (repair each with `comb-admin republish-members HOST`)");
  return as_int(exit_code::ok);
}

} // namespace

void add_repair_commands(CLI::App& app, admin_cli& cli) {
  auto args = std::make_shared<repair_args>();
  auto* republish = app.add_subcommand("republish-members",
                                       "rewrite the member list from the stored members");
  republish->add_option("HOST", args->host, "a host of the community")->required();
  on_run(republish, cli, args, run_republish);
  auto* verify = app.add_subcommand("verify", "check each live member list against the members");
  verify->add_option("--host", args->host, "check only this community");
  on_run(verify, cli, args, run_verify);
}

} // namespace comb::admin
