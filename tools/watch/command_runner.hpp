// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace comb::watch {

/// Runs `--exec` commands through /bin/sh -c without waiting for them: fork/exec, then children
/// are reaped when SIGCHLD arrives, so a slow webhook never stalls the event loop.
class command_runner {
public:
  command_runner(boost::asio::io_context& io, std::string command);

  /// Starts the command with `extra_environment` ("NAME=value") added to ours and `input` on
  /// its standard input (held in a memory file, so a command that never reads it stalls
  /// nothing). False when it could not be started.
  bool run(const std::vector<std::string>& extra_environment, std::string_view input);

private:
  void await_children();
  void reap_children();

  std::string command_;
  boost::asio::signal_set child_exits_;
};

} // namespace comb::watch
