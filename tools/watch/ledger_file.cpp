// SPDX-License-Identifier: MIT
#include "tools/watch/ledger_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace comb::watch {
namespace {

/// Closes a descriptor on every path out of a function.
class descriptor {
public:
  explicit descriptor(int fd) : fd_(fd) {}
  ~descriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  /// close() reports write-back errors that fsync may not have; so it is checked, once.
  [[nodiscard]] bool close_checked() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

private:
  int fd_;
};

bool write_all(int fd, const std::string& contents) {
  std::size_t done = 0;
  while (done < contents.size()) {
    auto n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool write_and_sync(const std::filesystem::path& file, const std::string& contents) {
  descriptor fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0)
    return false;
  if (!write_all(fd.get(), contents) || ::fsync(fd.get()) != 0)
    return false;
  return fd.close_checked();
}

bool sync_folder(const std::filesystem::path& folder) {
  descriptor fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return fd.get() >= 0 && ::fsync(fd.get()) == 0;
}

} // namespace

bool write_file_atomically(const std::filesystem::path& file, const std::string& contents) {
  auto temporary = file;
  temporary += ".tmp";
  if (!write_and_sync(temporary, contents)) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return false;
  }
  if (::rename(temporary.c_str(), file.c_str()) != 0)
    return false;
  auto folder = file.parent_path();
  return sync_folder(folder.empty() ? std::filesystem::path(".") : folder);
}

std::filesystem::path ledger_path(const std::filesystem::path& state_dir,
                                  std::string_view community,
                                  std::string_view viewer_hex) {
  std::string name;
  for (char c : community) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                 || c == '.' || c == '-';
    name += plain ? c : '_';
  }
  name += '.';
  name += viewer_hex;
  name += ".ledger";
  return state_dir / name;
}

std::filesystem::path default_state_dir() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state)
    return std::filesystem::path(state) / "comb-watch";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local" / "state" / "comb-watch";
  return "comb-watch-state";
}

std::optional<ledger> load_ledger(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::exists(file, error))
    return error ? std::nullopt : std::optional<ledger>(ledger{});
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return ledger::parse(text.str());
}

} // namespace comb::watch
