// SPDX-License-Identifier: MIT
#pragma once
// Test helpers for the Redis tier: a private redis-server per test that can be killed, frozen
// and restarted on the same port, loopback sockets, io threads, and bounded polling.

#include <arpa/inet.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace comb::test {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// Polls until `done()` or the deadline: every wait in these tests is bounded.
template <class Predicate> bool eventually(Predicate done, std::chrono::milliseconds limit = 5s) {
  const auto deadline = clock_type::now() + limit;
  while (!done()) {
    if (clock_type::now() > deadline)
      return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

/// A loopback TCP socket; listening (never accepting) when asked, else just holding a port.
struct tcp_socket {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  explicit tcp_socket(bool listening) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0);
    port = ntohs(address.sin_port);
    if (listening)
      REQUIRE(::listen(fd, 16) == 0);
  }
  tcp_socket(const tcp_socket&) = delete;
  tcp_socket& operator=(const tcp_socket&) = delete;
  ~tcp_socket() { ::close(fd); }
};

inline int free_port() {
  return tcp_socket(false).port;
}

inline bool accepts_connections(int port) {
  tcp_socket probe(false);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  return ::connect(probe.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
}

/// A private redis-server on a free loopback port, which a test can stop and start again.
class redis_server {
public:
  /// `extra` is appended to the command line, e.g. "--requirepass secret".
  /// The port is picked free, and again (3 times at most) when another process took it before
  /// redis-server bound it; restarts keep it.
  explicit redis_server(std::string extra = {}) : dir_(make_dir()), extra_(std::move(extra)) {
    for (int attempt = 1; attempt <= 3 && pid_ <= 0; ++attempt) {
      port_ = free_port();
      try_start();
    }
    REQUIRE(pid_ > 0);
  }
  ~redis_server() {
    stop();
    std::filesystem::remove_all(dir_);
  }

  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }

  void start() { REQUIRE(try_start()); }

  /// Whether redis-server runs on port_: it writes its pid file only after it bound the port, so
  /// a port taken by someone else (who would answer the connect probe too) shows as no pid.
  bool try_start() {
    const std::string command = "redis-server --bind 127.0.0.1 --port " + std::to_string(port_)
                                + " --save '' --appendonly no --daemonize yes --pidfile " + dir_
                                + "/redis.pid --logfile " + dir_ + "/redis.log --dir " + dir_
                                + " " + extra_;
    if (std::system(command.c_str()) != 0)
      return false;
    const bool running = eventually([&] {
      std::ifstream pidfile(dir_ + "/redis.pid");
      return static_cast<bool>(pidfile >> pid_);
    }, 3s);
    if (!running)
      pid_ = 0;
    return running && eventually([&] { return accepts_connections(port_); });
  }

  /// A crash: the kernel closes every socket at once (a SIGTERM exit takes Redis over a second).
  void stop() {
    if (pid_ <= 0)
      return;
    ::kill(pid_, SIGKILL);
    CHECK(eventually([&] { return exited(pid_); }));
    std::filesystem::remove(dir_ + "/redis.pid"); // so start() cannot read the stale pid
    pid_ = 0;
  }

  /// Freezes the server: its sockets stay open and the kernel still accepts connections.
  void freeze() { REQUIRE(::kill(pid_, SIGSTOP) == 0); }
  void thaw() { REQUIRE(::kill(pid_, SIGCONT) == 0); }

private:
  /// Gone or a zombie: its sockets are closed either way (reaping the daemon is up to init,
  /// which may take seconds).
  static bool exited(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line))
      return true;
    const auto close = line.rfind(')');
    return close != std::string::npos && line.compare(close, 3, ") Z") == 0;
  }

  static std::string make_dir() {
    char pattern[] = "/tmp/comb-redis-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    return pattern;
  }

  std::string dir_;
  int port_;
  std::string extra_;
  pid_t pid_ = 0;
};

/// Runs the io_context on two threads, so the strand is really shared between threads.
struct io_threads {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::vector<std::thread> threads;
  io_threads() {
    for (int i = 0; i < 2; ++i)
      threads.emplace_back([this] { io.run(); });
  }
  ~io_threads() {
    work.reset();
    io.stop();
    for (auto& thread : threads)
      thread.join();
  }
};

} // namespace comb::test
