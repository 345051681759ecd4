// SPDX-License-Identifier: MIT
// comb-relay: a Nostr relay for self-hosted communities.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "protocol/canonical_json.hpp"

#include "actors/relay_system.hpp"
#include "conf/options.hpp"
#include "conf/settings.hpp"

namespace {

/// Each connection holds two descriptors (its socket and the duplicate its outbox writes on),
/// plus the pod's own (Postgres, Redis, logs, listeners): the soft limit, often 1,024, would
/// refuse sockets far below COMB_MAX_CONNECTIONS, so it is raised to the hard limit.
void allow_descriptors_for(std::size_t max_connections) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t pod_descriptors = 256;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 2 * max_connections + pod_descriptors)
    spdlog::warn("the descriptor limit ({}) holds fewer than COMB_MAX_CONNECTIONS ({}) connections at "
                 "two descriptors each: raise it (ulimit -n, LimitNOFILE=)",
                 limit.rlim_cur, max_connections);
}

/// `%*`: the message as a JSON string, escaped, so a quote in a message cannot break a line.
class json_message_flag final : public spdlog::custom_flag_formatter {
public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string escaped;
    comb::protocol::append_json_string(escaped, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }

  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<json_message_flag>();
  }
};

void configure_logs(const comb::conf::relay_settings& s) {
  auto logger = spdlog::stderr_color_mt("comb");
  if (s.log_format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<json_message_flag>('*').set_pattern(
      R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","message":%*})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(s.log_level));
  spdlog::set_default_logger(logger);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"comb-relay: a Nostr relay for self-hosted communities"};
  std::map<std::string, std::string> overrides;
  std::string config_file;
  bool print_config = false;
  bool check_config = false;
  app.add_option("--config", config_file,
                 std::string("TOML configuration file (also COMB_CONFIG); default: ")
                   + comb::conf::default_config_file + " when it exists");
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");
  app.add_flag("--check-config", check_config,
               "check the settings (database URL set, key file, addresses resolved, secrets, Redis URL) "
               "and exit: 0 when the "
               "relay may start with them");
  app.set_version_flag("--version", "comb-relay " COMB_VERSION);
  for (const auto& option : comb::conf::all_options()) {
    app.add_option_function<std::string>(
      "--" + option.key, [&overrides, key = option.key](const std::string& v) { overrides[key] = v; },
      option.help + " (" + option.env + ")");
  }
  CLI11_PARSE(app, argc, argv);
  if (!config_file.empty())
    overrides["config"] = config_file;

  const auto environment = comb::conf::comb_environment();
  auto loaded = comb::conf::load_settings(environment, overrides);
  // Not refused as an unknown TOML key is: the environment also carries other programs' names.
  for (const auto& name : comb::conf::unclaimed_variables(environment))
    std::cerr << "comb-relay: warning: " << name << " is not a setting and is ignored (a typo?)\n";
  if (!loaded.problems.empty()) {
    for (const auto& problem : loaded.problems)
      std::cerr << "comb-relay: invalid setting " << problem.option << ": " << problem.message << "\n";
    return 2;
  }
  if (print_config) {
    std::cout << comb::conf::print_settings(loaded.settings);
    return 0;
  }
  if (check_config) {
    if (auto problem = comb::actors::startup_problem(loaded.settings)) {
      std::cerr << "comb-relay: " << *problem << "\n";
      return 2;
    }
    std::cout << "comb-relay: configuration OK"
              << (loaded.settings.config_file.empty() ? "" : " (" + loaded.settings.config_file + ")")
              << "\n";
    return 0;
  }
  configure_logs(loaded.settings);
  allow_descriptors_for(loaded.settings.max_connections);
  return comb::actors::run_relay(loaded.settings);
}
