// SPDX-License-Identifier: MIT
#include "admin/membership_change.hpp"

#include <span>
#include <string>

#include "admin/live_push.hpp"
#include "protocol/hex.hpp"
#include "storage/membership_store.hpp"

namespace comb::admin {
namespace {

using storage::membership_change;
using storage::membership_outcome;

std::string role_text(storage::member_role role) {
  return std::string(storage::role_name(role));
}

/// Says what happened in the operator's terms; `who` names the subject.
std::string describe(membership_outcome outcome, const storage::membership_command& command,
                     const std::string& who, const std::string& host) {
  switch (outcome) {
    case membership_outcome::changed:
      switch (command.change) {
        case membership_change::add_member:
          return "added " + who + " to " + host + " as " + role_text(command.role);
        case membership_change::remove_member:
        case membership_change::remove_member_if_role: return "removed " + who + " from " + host;
        case membership_change::update_role:
          return who + " is now " + role_text(command.role) + " of " + host;
        case membership_change::transfer_owner:
        case membership_change::provision_owner: return who + " is now the owner of " + host;
        default: return "rewrote the member list of " + host + " from its stored members";
      }
    case membership_outcome::already_member:
      return "conflict: " + who + " is already a member of " + host;
    case membership_outcome::already_owner:
      return "conflict: " + who + " is already the owner of " + host;
    case membership_outcome::nothing_to_do:
      return "conflict: " + who + " already has the role " + role_text(command.role) + " in "
             + host;
    case membership_outcome::not_member: return "not found: " + who + " is not a member of " + host;
    case membership_outcome::is_owner:
      return who + " is the owner of " + host
             + "; the owner cannot be removed or demoted (use transfer-owner first)";
    case membership_outcome::role_mismatch:
      return "role mismatch: " + who + " is not "
             + role_text(command.expected_role.value_or(storage::member_role::member)) + " in "
             + host;
    case membership_outcome::not_allowed:
      return command.change == membership_change::transfer_owner
               ? "not allowed: " + host + " has no owner to transfer from (set COMB_OWNER_PUBKEY)"
               : "not allowed: the membership rules refuse this change";
    case membership_outcome::banned:
      return "not allowed: " + who + " is banned from " + host + " (NIP-86 unbanpubkey lifts it)";
    default: return "unexpected outcome " + std::string(storage::outcome_name(outcome));
  }
}

void record_members(const storage::membership_write& write, reporter& out) {
  out.fields()["member_count"] = static_cast<std::int64_t>(write.members.size());
  if (write.list)
    out.fields()["list_id"] = protocol::to_hex(write.list->id);
}

} // namespace

exit_code exit_code_of(membership_outcome outcome) noexcept {
  switch (outcome) {
    case membership_outcome::changed: return exit_code::ok;
    case membership_outcome::not_member: return exit_code::not_found;
    case membership_outcome::is_owner: return exit_code::is_owner;
    case membership_outcome::role_mismatch:
    case membership_outcome::not_allowed: return exit_code::not_allowed;
    case membership_outcome::already_member:
    case membership_outcome::already_owner:
    case membership_outcome::nothing_to_do: return exit_code::conflict;
    case membership_outcome::failed:
    case membership_outcome::busy: return exit_code::database;
    default: return exit_code::not_allowed; // invite outcomes: not produced by operator commands
  }
}

int report_write(const admin_options& options, const storage::community_row& community,
                 const storage::membership_command& command,
                 const storage::membership_write& write, reporter& out) {
  if (!write.committed || write.results.empty())
    return out.fail(exit_code::database, "database error, nothing changed: " + write.error);
  auto outcome = write.results.front().outcome;
  out.fields()["outcome"] = storage::outcome_name(outcome);
  const std::string who = command.change == membership_change::republish
                            ? std::string()
                            : npub_of(command.subject);
  auto message = describe(outcome, command, who, community.host);
  auto code = exit_code_of(outcome);
  if (code != exit_code::ok)
    return out.fail(code, message);
  record_members(write, out);
  out.say(message);
  push_live(options.redis_url, options.cluster_secret, community.id, write, out);
  return as_int(exit_code::ok);
}

int apply_and_report(const admin_options& options, admin_session& session,
                     const storage::community_row& community,
                     const storage::membership_command& command, reporter& out) {
  auto key = load_key(options, out);
  if (!key)
    return out.failed_code();
  storage::membership_store store(session.connection, *key);
  // A change in a second that already has a list waits for the next one (lists keep pace
  // with the clock); the notification it raises makes every pod enforce it.
  auto write = store.apply_paced(community.id, std::span(&command, 1), unix_now(),
                                 sleep_until_database_second);
  return report_write(options, community, command, write, out);
}

} // namespace comb::admin
