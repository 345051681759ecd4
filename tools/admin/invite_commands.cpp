// SPDX-License-Identifier: MIT
// comb-admin invite create|list|revoke
#include <algorithm>
#include <boost/json/array.hpp>

#include "admin/commands.hpp"
#include "storage/invite_store.hpp"
#include "storage/membership_rules.hpp"
#include "storage/membership_store.hpp"

namespace comb::admin {
namespace {

/// Enough of a code hash to tell invites apart in a listing; revoke takes any unique prefix.
constexpr std::size_t shown_hash_chars = 12;

/// A century: longer is surely a typo, and keeps `now + ttl` far from overflow.
constexpr std::int64_t max_ttl_seconds = 100LL * 365 * 24 * 3600;

struct invite_args {
  std::string host;
  std::string hash_prefix;
  std::int64_t uses = 1;          // an operator hands a code to one person; see --uses
  std::int64_t ttl = 24 * 3600;   // likewise
};


int run_create(const admin_options& options, const invite_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    // Minting signs nothing (the relay signs the 28935 that carries a code), so no relay key
    // is needed; the store only requires one to exist.
    auto unused_key = protocol::key_pair::generate();
    storage::membership_store store(s.connection, unused_key);
    auto invite = store.mint_invite(c.id, std::nullopt, args.uses, args.ttl, unix_now());
    if (!invite)
      return out.fail(exit_code::database, "database error: " + store.last_error());
    out.fields()["code"] = invite->code;
    out.fields()["hash_prefix"] =
      storage::invite_code_hash(invite->code).substr(0, shown_hash_chars);
    out.fields()["max_uses"] = invite->max_uses;
    out.fields()["expires_at"] = invite->expires_at;
    out.say(invite->code);
    auto uses = args.uses == 0 ? std::string("unlimited") : std::to_string(args.uses);
    out.note("invite for " + c.host + ": " + uses + " use(s), valid " + std::to_string(args.ttl)
             + " s; the code is shown only this once (a member joins with a 28934 claiming it)");
    return as_int(exit_code::ok);
  });
}

std::string uses_text(const storage::invite_summary& invite) {
  return std::to_string(invite.use_count) + "/"
         + (invite.max_uses == 0 ? std::string("unlimited") : std::to_string(invite.max_uses));
}

int run_list(const admin_options& options, const invite_args& args, reporter& out) {
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    storage::invite_store store(s.connection);
    auto invites = store.list(c.id);
    if (!invites)
      return out.fail(exit_code::database, "database error: " + store.last_error());
    const auto now = unix_now();
    boost::json::array rows;
    out.say("HASH_PREFIX\tUSES\tEXPIRES_AT\tSTATE\tKIND");
    for (const auto& invite : *invites) {
      auto prefix = invite.code_hash.substr(0, shown_hash_chars);
      bool expired = invite.expires_at <= now;
      rows.push_back({{"hash_prefix", prefix}, {"use_count", invite.use_count},
                      {"max_uses", invite.max_uses}, {"expires_at", invite.expires_at},
                      {"expired", expired}, {"revoked", invite.revoked},
                      {"created_by", invite.created_by}, {"chosen", invite.chosen}});
      const char* state = invite.revoked ? "revoked" : expired ? "expired" : "active";
      out.say(prefix + '\t' + uses_text(invite) + '\t' + std::to_string(invite.expires_at) + '\t'
              + state + '\t' + (invite.chosen ? "chosen" : "minted"));
    }
    out.fields()["invites"] = std::move(rows);
    return as_int(exit_code::ok);
  });
}

bool is_hex_prefix(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
  });
}

int run_revoke(const admin_options& options, const invite_args& args, reporter& out) {
  if (!is_hex_prefix(args.hash_prefix))
    return out.fail(exit_code::usage, "not a hash prefix: \"" + args.hash_prefix
                                        + "\" (lowercase hex, as `invite list` shows it)");
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    storage::invite_store store(s.connection);
    out.fields()["hash_prefix"] = args.hash_prefix;
    const std::string which = "invite " + args.hash_prefix + " of " + c.host;
    switch (store.revoke(c.id, args.hash_prefix)) {
      case storage::revoke_result::revoked:
        out.say("revoked " + which);
        return as_int(exit_code::ok);
      case storage::revoke_result::already_revoked:
        return out.fail(exit_code::conflict, "conflict: " + which + " is already revoked");
      case storage::revoke_result::not_found:
        return out.fail(exit_code::not_found, "not found: no " + which);
      case storage::revoke_result::ambiguous:
        return out.fail(exit_code::usage, which + " matches several invites: give more characters");
      case storage::revoke_result::failed: break;
    }
    return out.fail(exit_code::database, "database error: " + store.last_error());
  });
}

} // namespace

void add_invite_commands(CLI::App& app, admin_cli& cli) {
  auto* group = app.add_subcommand("invite", "mint, list and revoke invite codes");
  group->require_subcommand(1);
  auto args = std::make_shared<invite_args>();
  auto host = [&](CLI::App* command) {
    command->add_option("HOST", args->host, "a host of the community")->required();
    return command;
  };
  auto* create = host(group->add_subcommand("create", "mint an invite; prints its code once"));
  create->add_option("--uses", args->uses, "how many joins it admits; 0: unlimited (default 1)")
    ->check(CLI::Range(std::int64_t{0}, std::int64_t{2147483647})); // an INTEGER column
  create->add_option("--ttl", args->ttl, "seconds until it expires (default 86400)")
    ->check(CLI::Range(std::int64_t{1}, max_ttl_seconds));
  on_run(create, cli, args, run_create);
  on_run(host(group->add_subcommand("list", "list invites (never their codes)")), cli, args,
         run_list);
  auto* revoke = host(group->add_subcommand("revoke", "revoke an invite by its hash prefix"));
  revoke->add_option("HASH_PREFIX", args->hash_prefix, "as `invite list` shows it")->required();
  on_run(revoke, cli, args, run_revoke);
}

} // namespace comb::admin
