// SPDX-License-Identifier: MIT
#include "tools/watch/command_runner.hpp"

#include <csignal>
#include <fcntl.h>
#include <cstring>
#include <iostream>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace comb::watch {
namespace {

/// Our environment plus `extra`, the extra entries replacing same-named inherited ones.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> merged;
  for (char** entry = environ; *entry; ++entry) {
    std::string_view text(*entry);
    bool overridden = false;
    for (const auto& e : extra)
      overridden = overridden || text.substr(0, text.find('=') + 1) == e.substr(0, e.find('=') + 1);
    if (!overridden)
      merged.emplace_back(text);
  }
  merged.insert(merged.end(), extra.begin(), extra.end());
  return merged;
}

/// An anonymous memory file holding `text`, read from its start; -1 on failure (errno set).
int file_holding(std::string_view text) {
  int fd = ::memfd_create("comb-watch-alert", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  std::size_t written = 0;
  while (written < text.size()) {
    auto n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = errno;
      ::close(fd);
      errno = error;
      return -1;
    }
    written += static_cast<std::size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) < 0) {
    int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

} // namespace

command_runner::command_runner(boost::asio::io_context& io, std::string command)
  : command_(std::move(command)), child_exits_(io, SIGCHLD) {
  await_children();
}

bool command_runner::run(const std::vector<std::string>& extra_environment, std::string_view input) {
  // Everything the child needs is built before fork, so the child only calls dup2 and execve.
  int input_file = file_holding(input);
  if (input_file < 0) {
    std::cerr << "comb-watch: could not hold the alert for --exec: " << std::strerror(errno) << "\n";
    return false;
  }
  auto environment = merged_environment(extra_environment);
  std::vector<char*> envp;
  for (auto& entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string shell = "/bin/sh";
  std::string dash_c = "-c";
  char* argv[] = {shell.data(), dash_c.data(), command_.data(), nullptr};
  pid_t child = ::fork();
  if (child == 0) {
    // dup2 leaves the close-on-exec flag behind, except onto itself (stdin was closed).
    bool input_ready = input_file == STDIN_FILENO ? ::fcntl(input_file, F_SETFD, 0) == 0
                                                  : ::dup2(input_file, STDIN_FILENO) >= 0;
    if (!input_ready)
      ::_exit(126);
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  int fork_error = errno;
  ::close(input_file);
  if (child < 0) {
    std::cerr << "comb-watch: could not start --exec command: " << std::strerror(fork_error) << "\n";
    return false;
  }
  return true;
}

void command_runner::await_children() {
  child_exits_.async_wait([this](const boost::system::error_code& error, int) {
    if (error)
      return;
    reap_children();
    await_children();
  });
}

void command_runner::reap_children() {
  // One SIGCHLD may stand for several exits, so reap until none is left.
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      std::cerr << "comb-watch: --exec command exited with " << WEXITSTATUS(status) << "\n";
  }
}

} // namespace comb::watch
