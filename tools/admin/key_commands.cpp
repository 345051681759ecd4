// SPDX-License-Identifier: MIT
// comb-admin key generate: a new relay key pair
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/commands.hpp"
#include "protocol/hex.hpp"
#include "protocol/signature.hpp"

namespace comb::admin {
namespace {

struct key_args {
  std::string out;
};

/// Writes the secret as the relay reads it (64 hex characters), readable by the owner only.
/// O_EXCL: an existing key is never replaced, since every list it signed depends on it.
int write_secret(const std::string& path, const protocol::key_pair& key, reporter& out) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty())
    std::filesystem::create_directories(parent, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST)
    return out.fail(exit_code::conflict,
                    "conflict: " + path + " exists; refusing to overwrite a key");
  if (fd < 0)
    return out.fail(exit_code::usage, "cannot create " + path + ": " + std::strerror(errno));
  std::string text = protocol::to_hex(key.secret()) + "\n";
  // fchmod as well: the mode given to open() is only an upper bound under the umask.
  bool ok = ::fchmod(fd, 0600) == 0
            && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size())
            && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) {
    std::filesystem::remove(path, ec);
    return out.fail(exit_code::usage, "cannot write " + path + ": " + std::strerror(error));
  }
  return as_int(exit_code::ok);
}

int run_generate(const admin_options& options, const key_args& args, reporter& out) {
  const std::string path = args.out.empty() ? options.effective_key_file() : args.out;
  auto key = protocol::key_pair::generate();
  if (int code = write_secret(path, key, out); code != 0)
    return code;
  auto hex = protocol::to_hex(key.public_key());
  auto npub = npub_of(key.public_key());
  out.fields()["pubkey"] = hex;
  out.fields()["npub"] = npub;
  out.fields()["file"] = path;
  out.say(hex);
  out.say(npub);
  out.note("secret key written to " + path + " (mode 0600)");
  return as_int(exit_code::ok);
}

} // namespace

void add_key_commands(CLI::App& app, admin_cli& cli) {
  auto* group = app.add_subcommand("key", "relay key pairs");
  group->require_subcommand(1);
  auto args = std::make_shared<key_args>();
  auto* generate = group->add_subcommand(
    "generate", "create a key pair; writes the secret (mode 0600), prints the public key");
  generate->add_option("--out", args->out,
                       "where to write the secret (default: the relay key file)");
  on_run(generate, cli, args, run_generate);
}

} // namespace comb::admin
