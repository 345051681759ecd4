// SPDX-License-Identifier: MIT
#include "admin/import_members.hpp"

#include "admin/jsonl_reader.hpp"
#include "admin/live_push.hpp"
#include "protocol/hex.hpp"
#include "storage/member_list.hpp"
#include "storage/membership_store.hpp"

namespace comb::admin {
namespace {

/// The pubkeys of the list's `member` tags. Another relay's role ids need not be comb's
/// (storage::members_of_list refuses those), and roles are not taken over anyway, so only the
/// pubkey is read; a tag without a valid one is skipped.
std::vector<protocol::bytes32> member_pubkeys(const protocol::event& list) {
  std::vector<protocol::bytes32> pubkeys;
  for (const auto& t : list.tags)
    if (t.size() >= 2 && t[0] == "member")
      if (auto pubkey = protocol::array_from_hex<32>(t[1]))
        pubkeys.push_back(*pubkey);
  return pubkeys;
}

std::vector<storage::membership_command> add_commands(const std::vector<protocol::bytes32>& pubkeys) {
  std::vector<storage::membership_command> commands;
  for (const auto& pubkey : pubkeys) {
    storage::membership_command command;
    command.change = storage::membership_change::add_member;
    command.subject = pubkey;
    // Roles are the other relay's to give: here the owner promotes whom they choose.
    command.role = storage::member_role::member;
    command.added_by = "import";
    commands.push_back(std::move(command));
  }
  return commands;
}

std::size_t count_added(const storage::membership_write& write) {
  std::size_t added = 0;
  for (const auto& result : write.results)
    added += result.outcome == storage::membership_outcome::changed ? 1 : 0;
  return added;
}

} // namespace

bool newer_version(const protocol::event& candidate, const protocol::event& kept) {
  if (candidate.created_at != kept.created_at)
    return candidate.created_at > kept.created_at;
  return candidate.id < kept.id;
}

std::optional<protocol::event> newest_list(std::FILE* file, const import_policy& policy) {
  std::optional<protocol::event> newest;
  jsonl_reader reader(file, policy.limits.max_message_bytes);
  jsonl_line line;
  while (reader.next(line)) {
    auto ev = read_event_line(line.text, policy);
    if (!ev || ev->kind != storage::member_list_kind)
      continue;
    if (policy.check_signatures && protocol::verify_event(ev.value()))
      continue;
    if (!newest || newer_version(ev.value(), *newest))
      newest = std::move(ev.value());
  }
  return newest;
}

std::optional<std::size_t> members_from_list(std::FILE* file, const import_policy& policy,
                                             const admin_options& options, admin_session& session,
                                             const storage::community_row& community,
                                             reporter& out) {
  // The file is read twice (the list first, wherever it is): a pipe cannot be.
  if (std::fseek(file, 0, SEEK_SET) != 0) {
    out.fail(exit_code::usage, "--members-from-list needs a file it can read twice (--in FILE)");
    return std::nullopt;
  }
  auto list = newest_list(file, policy);
  if (std::fseek(file, 0, SEEK_SET) != 0) {
    out.fail(exit_code::usage, "cannot read the file again after looking for the list");
    return std::nullopt;
  }
  if (!list) {
    out.note("--members-from-list: the file holds no valid 13534 list; no member added");
    return std::size_t{0};
  }
  auto members = member_pubkeys(*list);
  if (members.empty()) {
    out.note("--members-from-list: list " + protocol::to_hex(list->id) + " names no member");
    return std::size_t{0};
  }
  auto key = load_key(options, out);
  if (!key)
    return std::nullopt;
  auto commands = add_commands(members);
  storage::membership_store store(session.connection, *key);
  auto write = store.apply_paced(community.id, commands, unix_now(), storage::sleep_until_second);
  if (!write.committed) {
    out.fail(exit_code::database, "database error, no member added: " + write.error);
    return std::nullopt;
  }
  auto added = count_added(write);
  out.note("--members-from-list: list " + protocol::to_hex(list->id) + " names "
           + std::to_string(members.size()) + " members; added " + std::to_string(added));
  if (added > 0)
    push_live(options.redis_url, options.cluster_secret, community.id, write, out);
  return added;
}

} // namespace comb::admin
