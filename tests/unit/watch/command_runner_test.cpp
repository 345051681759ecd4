// SPDX-License-Identifier: MIT
// --exec runs a real /bin/sh command: an alert too large for one environment entry still starts
// it, and the command reads the whole alert on its standard input.
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/unit/watch/watch_fixtures.hpp"
#include "tools/watch/alert_output.hpp"
#include "tools/watch/command_runner.hpp"

using namespace comb::watch;
using namespace comb::watch::testing;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs the io_context until `path` holds a line ending in "done", 10 s at most.
bool wait_for_done(boost::asio::io_context& io, const std::filesystem::path& path) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    io.poll();
    if (read_file(path).ends_with("done\n"))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

} // namespace

TEST_CASE("comb-watch --exec starts for an alert naming thousands of members, whole on stdin",
          "[watch][exec]") {
  auto dir = std::filesystem::temp_directory_path()
             / ("comb-watch-exec-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<int> numbers;
  for (int n = 2; n < 5002; ++n)
    numbers.push_back(n);
  alert burst{keys(numbers), true};
  auto json = render_alert_json(burst, "hive.test", 1700000000);
  REQUIRE(json.size() > 256 * 1024); // past what one environment entry may hold

  boost::asio::io_context io;
  auto out = dir / "out";
  command_runner runner(io, "cat > '" + (dir / "stdin").string() + "'; { printf '%s %s %s\\n' "
                                "\"$COMB_ALERT_COUNT\" \"${COMB_ALERT_JSON-unset}\" "
                                "\"$(printf '%s' \"$COMB_ALERT_MEMBERS\" | wc -w)\"; echo done; } > '"
                                + out.string() + "'");
  REQUIRE(runner.run(alert_environment(burst, "hive.test", json), json + "\n"));
  REQUIRE(wait_for_done(io, out));
  CHECK(read_file(out) == "5000  1000\ndone\n"); // the JSON empty
  auto received = boost::json::parse(read_file(dir / "stdin")).as_object();
  CHECK(received.at("members").as_array().size() == 5000);

  // A small alert keeps its JSON in the environment too.
  alert one{{key(2)}, false};
  auto small = render_alert_json(one, "hive.test", 1700000000);
  std::filesystem::remove(out);
  REQUIRE(runner.run(alert_environment(one, "hive.test", small), small + "\n"));
  REQUIRE(wait_for_done(io, out));
  CHECK(read_file(out) == "1 " + small + " 1\ndone\n");
  std::filesystem::remove_all(dir);
}
