// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <string>
#include <vector>

namespace comb::watch {

/// Runs `--exec` commands through /bin/sh -c without waiting for them: fork/exec, then children
/// are reaped when SIGCHLD arrives, so a slow webhook never stalls the event loop.
class command_runner {
public:
  command_runner(boost::asio::io_context& io, std::string command);

  /// Starts the command with `extra_environment` ("NAME=value") added to ours.
  void run(const std::vector<std::string>& extra_environment);

private:
  void await_children();
  void reap_children();

  std::string command_;
  boost::asio::signal_set child_exits_;
};

} // namespace comb::watch
