// SPDX-License-Identifier: MIT
// comb-admin export: a community's events as JSONL (one event per line, oldest first), the
// format strfry and nostr-rs-relay read and write; then its requests to vanish (NIP-62).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "admin/commands.hpp"
#include "storage/event_export.hpp"

namespace comb::admin {
namespace {

struct export_args {
  std::string host;
  std::optional<std::int64_t> since;
  std::optional<std::int64_t> until;
  std::vector<std::uint32_t> kinds;
  std::string out_file; ///< empty or "-": stdout
};

/// Where the lines go: stdout or a new file (written through a temporary name, so a failed
/// export never leaves a file that looks complete).
class export_target {
public:
  explicit export_target(std::string path) : path_(std::move(path)) {}
  ~export_target() {
    if (file_ && file_ != stdout)
      std::fclose(file_);
    if (!committed_ && !path_.empty())
      std::remove(partial().c_str());
  }
  export_target(const export_target&) = delete;
  export_target& operator=(const export_target&) = delete;

  bool open(reporter& out) {
    if (!path_.empty() && std::filesystem::exists(path_)) {
      out.fail(exit_code::conflict, "file exists, not overwritten: " + path_);
      return false;
    }
    file_ = path_.empty() ? stdout : std::fopen(partial().c_str(), "wx");
    if (!file_)
      out.fail(exit_code::usage, "cannot write " + partial() + ": " + std::strerror(errno));
    return file_ != nullptr;
  }

  bool write(std::string_view json) {
    return std::fwrite(json.data(), 1, json.size(), file_) == json.size()
           && std::fputc('\n', file_) != EOF;
  }

  /// Flushes and, for a file, gives it its final name. The error, if any.
  std::optional<std::string> commit() {
    if (std::fflush(file_) != 0)
      return std::string("write failed: ") + std::strerror(errno);
    if (path_.empty())
      return std::nullopt;
    if (std::fclose(file_) != 0) {
      file_ = nullptr;
      return std::string("write failed: ") + std::strerror(errno);
    }
    file_ = nullptr;
    if (std::rename(partial().c_str(), path_.c_str()) != 0)
      return "cannot rename " + partial() + " to " + path_ + ": " + std::strerror(errno);
    committed_ = true;
    return std::nullopt;
  }

private:
  [[nodiscard]] std::string partial() const { return path_ + ".partial"; }

  std::string path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

int export_community(admin_session& session, const storage::community_row& community,
                     const export_args& args, reporter& out) {
  export_target target(args.out_file == "-" ? "" : args.out_file);
  if (!target.open(out))
    return out.failed_code();
  std::uint64_t exported = 0;
  bool write_failed = false;
  auto sink = [&](std::string_view json) {
    if (!target.write(json)) {
      write_failed = true;
      return false;
    }
    ++exported;
    return true;
  };
  storage::export_range range{args.since, args.until, args.kinds};
  if (auto error = storage::export_events(session.connection, community.id, range, unix_now(), sink))
    return out.fail(exit_code::database, "database error: " + *error);
  if (write_failed)
    return out.fail(exit_code::usage, std::string("write failed: ") + std::strerror(errno));
  if (auto error = target.commit())
    return out.fail(exit_code::usage, *error);
  out.fields()["exported"] = exported;
  out.note("exported " + std::to_string(exported) + " events");
  return as_int(exit_code::ok);
}

int run_export(const admin_options& options, const export_args& args, reporter& out) {
  bool to_stdout = args.out_file.empty() || args.out_file == "-";
  if (to_stdout && options.json)
    return out.fail(exit_code::usage, "--json needs --out FILE: stdout holds the JSON result");
  return on_community(options, args.host, out, [&](admin_session& s, const storage::community_row& c) {
    return export_community(s, c, args, out);
  });
}

} // namespace

void add_export_command(CLI::App& app, admin_cli& cli) {
  auto args = std::make_shared<export_args>();
  auto* command = app.add_subcommand(
    "export", "write a community's events as JSONL (one event per line, oldest first)");
  command->add_option("HOST", args->host, "a host of the community")->required();
  command->add_option("--since", args->since, "only events created at or after this unix time");
  command->add_option("--until", args->until, "only events created at or before this unix time");
  command->add_option("--kinds", args->kinds, "only these kinds (space or comma separated)")
    ->delimiter(',')
    ->check(CLI::Range(0, 65535));
  command->add_option("--out", args->out_file,
                      "write to this new file (never overwritten; default: stdout)");
  on_run(command, cli, args, run_export);
}

} // namespace comb::admin
