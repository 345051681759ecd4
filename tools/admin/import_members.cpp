// SPDX-License-Identifier: MIT
#include "admin/import_members.hpp"

#include <map>

#include "admin/jsonl_reader.hpp"
#include "admin/live_push.hpp"
#include "protocol/hex.hpp"
#include "protocol/kind_rules.hpp"
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
  return protocol::wins_as_version(candidate.created_at, candidate.id, kept.created_at, kept.id);
}

namespace {

/// What is kept of each author's newest list: the file's lists are anyone's (any key may
/// publish a 13534 to a relay that keeps any kind), so only the wanted author's is kept whole.
struct list_seen {
  std::int64_t created_at = 0;
  protocol::bytes32 id{};
  std::size_t members = 0;
};

struct lists_found {
  std::map<protocol::bytes32, list_seen> newest; ///< every author's
  std::optional<protocol::event> wanted;         ///< the wanted author's newest, whole
};

/// Each author's newest well-formed, correctly signed (unless the policy trusts the file) 13534
/// in the file that the relay's time window lets in. Reads from where the file is.
lists_found newest_lists(std::FILE* file, const import_policy& policy,
                         const std::optional<protocol::bytes32>& author) {
  lists_found found;
  const std::int64_t now = unix_now();
  jsonl_reader reader(file, policy.limits.max_message_bytes);
  jsonl_line line;
  while (reader.next(line)) {
    auto ev = read_event_line(line.text, policy);
    if (!ev || ev->kind != storage::member_list_kind)
      continue;
    // A list dated ahead would stay the newest after the real relay's next one. (How old a list
    // may be is not asked: the file is the old relay's past.)
    if (policy.created_at.max_seconds_ahead > 0 && ev->created_at > now + policy.created_at.max_seconds_ahead)
      continue;
    if (policy.check_signatures && protocol::verify_event(ev.value()))
      continue;
    auto kept = found.newest.find(ev->pubkey);
    if (kept != found.newest.end() && !protocol::wins_as_version(ev->created_at, ev->id, kept->second.created_at, kept->second.id))
      continue;
    found.newest[ev->pubkey] = {ev->created_at, ev->id, member_pubkeys(ev.value()).size()};
    if (author && ev->pubkey == *author)
      found.wanted = std::move(ev.value());
  }
  return found;
}

} // namespace

std::optional<protocol::event> relay_list(std::FILE* file, const import_policy& policy,
                                          const std::optional<protocol::bytes32>& author,
                                          std::string_view option, reporter& out) {
  auto lists = newest_lists(file, policy, author);
  if (lists.wanted)
    return std::move(lists.wanted);
  std::string found;
  for (const auto& [pubkey, list] : lists.newest)
    found += "\n  " + npub_of(pubkey) + ": newest list at " + std::to_string(list.created_at) + ", "
             + std::to_string(list.members) + " members";
  std::string why = author ? "the file holds no valid 13534 list of " + npub_of(*author)
                           : "name the key of the relay that wrote the file (its NIP-11 self or"
                             " pubkey) with --list-author: anyone may publish a 13534 to a relay"
                             " that keeps any kind";
  out.fail(exit_code::usage, std::string(option) + ": " + why
                               + (found.empty() ? "; the file holds no valid 13534 list" : "; its lists are by:" + found));
  return std::nullopt;
}

std::optional<std::size_t> members_from_list(std::FILE* file, const import_policy& policy,
                                             const std::optional<protocol::bytes32>& list_author,
                                             const admin_options& options, admin_session& session,
                                             const storage::community_row& community,
                                             reporter& out) {
  // The file is read twice (the list first, wherever it is): a pipe cannot be.
  if (std::fseek(file, 0, SEEK_SET) != 0) {
    out.fail(exit_code::usage, "--members-from-list needs a file it can read twice (--in FILE)");
    return std::nullopt;
  }
  auto list = relay_list(file, policy, list_author, "--members-from-list", out);
  if (!list)
    return std::nullopt;
  if (std::fseek(file, 0, SEEK_SET) != 0) {
    out.fail(exit_code::usage, "cannot read the file again after looking for the list");
    return std::nullopt;
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
  auto write = store.apply_paced(community.id, commands, unix_now(), sleep_until_database_second);
  if (!write.committed) {
    out.fail(exit_code::database, "database error, no member added: " + write.error);
    return std::nullopt;
  }
  auto added = count_added(write);
  out.note("--members-from-list: list " + protocol::to_hex(list->id) + " of " + npub_of(list->pubkey)
           + " names " + std::to_string(members.size()) + " members; added " + std::to_string(added));
  out.fields()["list_author"] = protocol::to_hex(list->pubkey);
  if (added > 0)
    push_live(options.redis_url, options.cluster_secret, community.id, write, out);
  return added;
}

} // namespace comb::admin
