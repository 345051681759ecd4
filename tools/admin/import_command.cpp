// SPDX-License-Identifier: MIT
// comb-admin import: JSONL events (strfry, nostr-rs-relay, comb export) into a community, each
// line through the rules a client's EVENT meets and the relay's own storage writer.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "admin/commands.hpp"
#include "admin/import_members.hpp"
#include "admin/import_rooms.hpp"
#include "admin/import_rules.hpp"
#include "admin/import_tally.hpp"
#include "admin/jsonl_reader.hpp"
#include "conf/settings.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/nip62.hpp"
#include "protocol/room.hpp"
#include "storage/event_store.hpp"
#include "storage/membership_store.hpp"
#include "storage/store_plan.hpp"

namespace comb::admin {
namespace {

constexpr std::uint64_t max_lines_shown = 100;
/// A batch is stored once it holds this much JSON, whatever --batch says, so memory stays
/// bounded by bytes and not only by the count of events (an event may be 1 MiB).
constexpr std::size_t max_batch_bytes = 4 * 1024 * 1024;

struct import_args {
  std::string host;
  std::string in_file; ///< empty or "-": stdin
  bool skip_signature_check = false;
  bool any_author = false;
  bool strict = false;
  bool members_from_list = false;
  bool rooms_from_state = false;
  std::string list_author; ///< hex or npub; needed by members_from_list and rooms_from_state
  std::size_t batch = 500;
};

struct file_closer {
  void operator()(std::FILE* file) const noexcept {
    if (file != stdin)
      std::fclose(file);
  }
};
using input_file = std::unique_ptr<std::FILE, file_closer>;

/// The relay's limits and windows as the relay itself would read them (file, environment).
std::optional<import_policy> policy_of(const import_args& args, reporter& out) {
  auto loaded = conf::load_settings(conf::comb_environment(), {});
  if (!loaded.problems.empty()) {
    const auto& problem = loaded.problems.front();
    out.fail(exit_code::usage, "relay setting " + problem.option + ": " + problem.message);
    return std::nullopt;
  }
  import_policy policy;
  policy.limits = loaded.settings.limits;
  policy.created_at = loaded.settings.created_at;
  policy.max_deletion_targets = loaded.settings.max_deletion_targets;
  policy.check_signatures = !args.skip_signature_check;
  return policy;
}

/// One run: reads lines, checks them, stores them in batches, keeps the tally.
class importer {
public:
  importer(admin_session& session, const storage::community_row& community,
           const import_policy& policy, const import_args& args,
           std::optional<std::set<protocol::bytes32>> admitted, reporter& out)
    : store_(session.connection),
      community_(community),
      policy_(policy),
      args_(args),
      admitted_(std::move(admitted)),
      out_(out),
      progress_(stderr) {}

  /// The exit code; the tally holds what was done either way.
  int run(std::FILE* file) {
    jsonl_reader reader(file, policy_.limits.max_message_bytes);
    jsonl_line line;
    while (reader.next(line)) {
      ++tally_.read;
      if (!consider(line))
        return stop_at(line);
      if ((pending_.size() >= args_.batch || pending_bytes_ >= max_batch_bytes) && !flush())
        return database_failure();
      progress_.tick(tally_);
    }
    if (!flush())
      return database_failure();
    progress_.done(tally_);
    if (reader.failed())
      return out_.fail(exit_code::usage, std::string("read failed: ") + std::strerror(errno));
    return as_int(exit_code::ok);
  }

  [[nodiscard]] const import_tally& tally() const noexcept { return tally_; }

private:
  struct pending_line {
    std::uint64_t number = 0;
    storage::event_write write;
  };

  /// Checks one line and queues it; false when --strict must stop here.
  bool consider(const jsonl_line& line) {
    auto ev = read_event_line(line.text, policy_);
    if (!ev)
      return refuse(line, ev.error());
    const auto* admitted = admitted_ ? &*admitted_ : nullptr;
    if (auto refusal = import_refusal(ev.value(), unix_now(), policy_, admitted))
      return refuse(line, *refusal);
    auto shared = std::make_shared<const protocol::event>(std::move(ev.value()));
    auto json = std::make_shared<const std::string>(protocol::render_event_json(*shared));
    pending_bytes_ += json->size();
    // No access check: an import restores what a community held, its former members' events
    // included (import_rules decide what it takes). But its rooms must exist, as live: readers
    // of a community with no such room would be shown a private room's messages.
    auto rooms = protocol::rooms_of_event(*shared);
    std::erase(rooms, std::string(protocol::general_room));
    pending_.push_back({line.number, {community_.id, std::move(shared), std::move(json), std::move(rooms), false}});
    return true;
  }

  bool refuse(const jsonl_line& line, line_refusal refusal) {
    if (refusal.bad_line && !line.complete) {
      refusal.reason = "truncated";
      refusal.message += " (the last line has no newline: is the file truncated?)";
    }
    tally_.refuse(refusal.reason);
    if (!refusal.bad_line)
      return true;
    ++tally_.bad_lines;
    if (tally_.bad_lines <= max_lines_shown) {
      progress_.clear_line();
      tally_.bad_line_numbers.push_back(line.number);
      out_.note("line " + std::to_string(line.number) + ": " + refusal.message);
    } else if (tally_.bad_lines == max_lines_shown + 1) {
      progress_.clear_line();
      out_.note("more bad lines; only the first " + std::to_string(max_lines_shown) + " are shown");
    }
    return !args_.strict;
  }

  /// Stores the queued lines in one transaction; false when the database failed.
  bool flush() {
    if (pending_.empty())
      return true;
    std::vector<storage::event_write> writes;
    writes.reserve(pending_.size());
    for (const auto& p : pending_)
      writes.push_back(p.write);
    auto outcomes = store_.store_batch(writes);
    for (std::size_t i = 0; i < outcomes.size(); ++i)
      if (!count(outcomes[i], writes[i].ev->kind)) {
        failed_message_ = outcomes[i].message;
        return false;
      }
    pending_.clear();
    pending_bytes_ = 0;
    return true;
  }

  bool count(const storage::store_outcome& outcome, std::uint32_t kind) {
    using status = storage::store_outcome::status;
    switch (outcome.result) {
      case status::stored:
        ++tally_.stored;
        tally_.replaced += outcome.replaced ? 1 : 0;
        return true;
      case status::duplicate: ++tally_.duplicate; return true;
      case status::applied:
        if (kind == protocol::vanish_kind)
          ++tally_.vanished;
        else if (outcome.message == storage::msg_deletion_not_kept)
          tally_.refuse("not kept");
        else
          ++tally_.stored; // deleted or replaced later in the file's same batch
        return true;
      case status::refused: tally_.refuse(reason_of(outcome.message)); return true;
      case status::failed: return false;
    }
    return false;
  }

  /// "blocked: this event was deleted by its author" -> "deleted"; the writer's refusals.
  static std::string reason_of(const std::string& message) {
    if (message == storage::msg_deleted_id || message == storage::msg_deleted_address)
      return "deleted";
    if (message == storage::msg_banned_event || message == storage::msg_banned_author)
      return "banned";
    if (message == storage::msg_vanished)
      return "vanished";
    if (message == storage::msg_room_deleted)
      return "no_such_room";
    return "blocked";
  }

  int stop_at(const jsonl_line& line) {
    bool stored = flush(); // the lines before the bad one are good: keep them
    progress_.done(tally_);
    if (!stored)
      return database_failure();
    return out_.fail(exit_code::usage, "--strict: stopped at line " + std::to_string(line.number));
  }

  int database_failure() {
    progress_.done(tally_);
    return out_.fail(exit_code::database,
                     "database error, the last batch was not stored (" + failed_message_
                       + "); running the import again is safe");
  }

  storage::event_store store_;
  const storage::community_row& community_;
  const import_policy& policy_;
  const import_args& args_;
  std::optional<std::set<protocol::bytes32>> admitted_;
  reporter& out_;
  import_progress progress_;
  import_tally tally_;
  std::vector<pending_line> pending_;
  std::size_t pending_bytes_ = 0;
  std::string failed_message_;
};

input_file open_input(const std::string& path, reporter& out) {
  if (path.empty() || path == "-")
    return input_file(stdin);
  input_file file(std::fopen(path.c_str(), "rb"));
  if (!file)
    out.fail(exit_code::usage, "cannot read " + path + ": " + std::strerror(errno));
  return file;
}

/// Who may author imported events: members only in a closed community, unless --any-author.
std::optional<std::optional<std::set<protocol::bytes32>>>
admitted_authors(admin_session& session, const storage::community_row& community,
                 const import_args& args, reporter& out) {
  if (!community.closed || args.any_author)
    return std::optional<std::set<protocol::bytes32>>();
  auto members = storage::load_members(session.connection, community.id);
  if (!members) {
    out.fail(exit_code::database, "database error: cannot read the members");
    return std::nullopt;
  }
  std::set<protocol::bytes32> admitted;
  for (const auto& m : *members)
    admitted.insert(m.pubkey);
  return std::optional(std::move(admitted));
}

int import_into(admin_session& session, const storage::community_row& community,
                const import_policy& policy, const admin_options& options,
                const import_args& args, std::FILE* file, reporter& out) {
  std::optional<protocol::bytes32> list_author;
  if (!args.list_author.empty() && !(list_author = parse_pubkey(args.list_author, out)))
    return out.failed_code();
  if (args.members_from_list) {
    auto added = members_from_list(file, policy, list_author, options, session, community, out);
    if (!added)
      return out.failed_code();
    out.fields()["members_added"] = *added;
  }
  if (args.rooms_from_state) { // after the members: a closed community's rooms take only them
    auto created = rooms_from_state(file, policy, list_author, options, session, community, out);
    if (!created)
      return out.failed_code();
    out.fields()["rooms_created"] = *created;
  }
  auto admitted = admitted_authors(session, community, args, out);
  if (!admitted)
    return out.failed_code();
  importer run(session, community, policy, args, std::move(*admitted), out);
  int code = run.run(file);
  run.tally().describe(out.fields());
  say_summary(run.tally(), out);
  return code;
}

int run_import(const admin_options& options, const import_args& args, reporter& out) {
  auto policy = policy_of(args, out);
  if (!policy)
    return out.failed_code();
  auto file = open_input(args.in_file, out);
  if (!file)
    return out.failed_code();
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    return import_into(s, c, *policy, options, args, file.get(), out);
  });
}

} // namespace

void add_import_command(CLI::App& app, admin_cli& cli) {
  auto args = std::make_shared<import_args>();
  auto* command = app.add_subcommand(
    "import", "store JSONL events (one per line) in a community, by the relay's own rules");
  command->add_option("HOST", args->host, "a host of the community")->required();
  command->add_option("--in", args->in_file, "read this file (default: stdin)");
  command->add_flag("--skip-signature-check", args->skip_signature_check,
                    "trust the file's signatures (ids are still checked)");
  command->add_flag("--any-author", args->any_author,
                    "a closed community takes events of non-members too");
  command->add_flag("--strict", args->strict, "stop at the first bad line");
  command->add_flag("--members-from-list", args->members_from_list,
                    "first add the members named by the newest 13534 list of the file's relay (needs --in)");
  command->add_flag("--rooms-from-state", args->rooms_from_state,
                    "first create the rooms (members, roles, flags, pins) the state events of the"
                    " file's relay describe (needs --in)");
  command->add_option("--list-author", args->list_author,
                      "the key of the relay that wrote the file (hex or npub: its NIP-11 self or"
                      " pubkey), whose list and room state --members-from-list and --rooms-from-state take");
  command->add_option("--batch", args->batch, "events stored per transaction (default 500)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{10000}));
  on_run(command, cli, args, run_import);
}

} // namespace comb::admin
