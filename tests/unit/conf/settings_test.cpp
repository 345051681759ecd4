// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "conf/options.hpp"
#include "conf/settings.hpp"

using namespace comb::conf;

TEST_CASE("defaults are the documented ones", "[conf]") {
  auto loaded = load_settings({}, {});
  REQUIRE(loaded.problems.empty());
  CHECK(loaded.settings.listen == "127.0.0.1:7777");
  CHECK(loaded.settings.effective_public_url() == "ws://127.0.0.1:7777");
  CHECK(loaded.settings.effective_relay_key_file() == "./var/relay.key");
  CHECK(loaded.settings.access == "open");
}

TEST_CASE("with no config named, the installed /etc/comb/comb.toml is read when it exists", "[conf]") {
  CHECK(std::string(default_config_file) == "/etc/comb/comb.toml");
  std::string installed = "/tmp/comb-settings-installed-test.toml";
  {
    std::ofstream file(installed);
    file << "[server]\nlisten = \"127.0.0.1:9100\"\n";
  }
  auto fallback = load_settings({}, {}, installed);
  REQUIRE(fallback.problems.empty());
  CHECK(fallback.settings.listen == "127.0.0.1:9100");
  CHECK(fallback.settings.config_file == installed);
  // A named file wins, and COMB_CONFIG= (empty) names none at all.
  auto none = load_settings({{"COMB_CONFIG", ""}}, {}, installed);
  CHECK(none.settings.listen == "127.0.0.1:7777");
  CHECK(none.settings.config_file.empty());
  auto missing = load_settings({}, {}, "/nonexistent/comb.toml");
  REQUIRE(missing.problems.empty());
  CHECK(missing.settings.config_file.empty());
  std::remove(installed.c_str());
}

TEST_CASE("environment overrides the file and flags override both", "[conf]") {
  std::string path = "/tmp/comb-settings-test.toml";
  {
    std::ofstream file(path);
    file << "[server]\nlisten = \"127.0.0.1:9000\"\nname = \"from file\"\n"
            "[limits]\nmax_limit = 100\nevent_rate = 2.5\n";
  }
  auto loaded = load_settings({{"COMB_CONFIG", path}, {"COMB_LISTEN", "127.0.0.1:9001"}},
                              {{"limits.max_limit", "200"}});
  REQUIRE(loaded.problems.empty());
  CHECK(loaded.settings.listen == "127.0.0.1:9001");
  CHECK(loaded.settings.name == "from file");
  CHECK(loaded.settings.limits.max_limit == 200u);
  CHECK(loaded.settings.event_rate == 2.5);
}

TEST_CASE("invalid values name the option and the accepted range", "[conf]") {
  auto check_problem = [](std::map<std::string, std::string> env, const std::string& option,
                          const std::string& message) {
    auto loaded = load_settings(env, {});
    REQUIRE(loaded.problems.size() == 1);
    CHECK(loaded.problems[0].option == option);
    CHECK(loaded.problems[0].message == message);
  };
  check_problem({{"COMB_MAX_LIMIT", "0"}}, "limits.max_limit", "COMB_MAX_LIMIT: must be a number from 1 to 1000000");
  check_problem({{"COMB_MAX_LIMIT", "lots"}}, "limits.max_limit", "COMB_MAX_LIMIT: must be a number from 1 to 1000000");
  // A NaN passes a range's two comparisons; it would switch the rate limit off.
  for (const char* not_finite : {"nan", "-nan", "inf"})
    check_problem({{"COMB_EVENT_RATE", not_finite}}, "limits.event_rate",
                  "COMB_EVENT_RATE: must be a number from 0.01 to 1e+06");
  check_problem({{"COMB_ACCESS", "public"}}, "community.access", "COMB_ACCESS: must be one of: open closed");
  check_problem({{"COMB_WS_DEFLATE", "maybe"}}, "websocket.deflate", "COMB_WS_DEFLATE: must be true or false");
  check_problem({{"COMB_LISTEN", "nowhere"}}, "server.listen",
                "COMB_LISTEN=\"nowhere\" must be host:port, e.g. 127.0.0.1:7777: the port is missing "
                "(host:port, e.g. 127.0.0.1:7777)");
  check_problem({{"COMB_PUBLIC_URL", "http://x"}}, "server.public_url",
                "COMB_PUBLIC_URL=\"http://x\" must be a ws:// or wss:// URL with no path");
  check_problem({{"COMB_OWNER_PUBKEY", "npub1nope"}}, "community.owner_pubkey", "must be 64 lowercase hex characters or an npub");
}

TEST_CASE("every address setting is parsed one way and named in its error", "[conf]") {
  auto named = load_settings({{"COMB_LISTEN", "localhost:7799"}, {"COMB_METRICS_LISTEN", "localhost:9799"}}, {});
  CHECK(named.problems.empty());
  const std::map<std::string, std::string> bad[] = {
    {{"COMB_LISTEN", "[zz]:7777"}},        {{"COMB_METRICS_LISTEN", "[zz]:1"}},
    {{"COMB_CLUSTER_LISTEN", "[zz]:1"}},   {{"COMB_CLUSTER_PEERS", "127.0.0.1:1,[::1"}},
    {{"COMB_PUBLIC_URL", "wss://[zz]"}},   {{"COMB_LISTEN", "127.0.0.1:70000"}},
  };
  for (const auto& env : bad) {
    const auto& [name, value] = *env.begin();
    INFO(name << "=" << value);
    auto loaded = load_settings(env, {});
    REQUIRE(loaded.problems.size() == 1);
    CHECK(loaded.problems[0].message.find(name) != std::string::npos);
  }
}

TEST_CASE("unknown keys in the file are refused", "[conf]") {
  std::string path = "/tmp/comb-settings-unknown.toml";
  {
    std::ofstream file(path);
    file << "[server]\nlisten_adress = \"127.0.0.1:9000\"\n";
  }
  auto loaded = load_settings({{"COMB_CONFIG", path}}, {});
  REQUIRE(loaded.problems.size() == 1);
  CHECK(loaded.problems[0].option == "server.listen_adress");
  CHECK(loaded.problems[0].message == path + ": unknown option");
}

TEST_CASE("printing masks secrets", "[conf]") {
  auto loaded = load_settings({{"COMB_DATABASE_URL", "postgresql://user:hunter2@db/comb"}}, {});
  auto printed = print_settings(loaded.settings);
  CHECK(printed.find("hunter2") == std::string::npos);
  CHECK(printed.find("database_url = \"********\"") != std::string::npos);
}

TEST_CASE("the example file lists every option and loads cleanly", "[conf]") {
  std::string path = std::string(COMB_SOURCE_DIR) + "/conf/comb.example.toml";
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(text.empty());
  for (const auto& o : comb::conf::all_options()) {
    INFO(o.key);
    CHECK(text.find(o.env) != std::string::npos);
  }
  auto loaded = load_settings({{"COMB_CONFIG", path}}, {});
  CHECK(loaded.problems.empty());
  auto defaults = load_settings({}, {});
  CHECK(print_settings(loaded.settings) == print_settings(defaults.settings) + "");
}

TEST_CASE("cluster links off this host need mutual TLS; the three files go together", "[conf]") {
  auto remote = load_settings({{"COMB_CLUSTER_LISTEN", "10.0.0.5:7801"}}, {});
  REQUIRE(remote.problems.size() == 1);
  CHECK(remote.problems[0].message.find("not on loopback") != std::string::npos);
  auto remote_peer = load_settings({{"COMB_CLUSTER_LISTEN", "127.0.0.1:7801"},
                                    {"COMB_CLUSTER_PEERS", "127.0.0.1:7802,pod-b.internal:7801"}}, {});
  REQUIRE(remote_peer.problems.size() == 1);
  CHECK(remote_peer.problems[0].message.find("pod-b.internal:7801") != std::string::npos);
  auto local = load_settings({{"COMB_CLUSTER_LISTEN", "[::1]:7801"},
                              {"COMB_CLUSTER_PEERS", "localhost:7802,127.0.0.2:7803"}}, {});
  CHECK(local.problems.empty());
  auto partial = load_settings({{"COMB_CLUSTER_CERT", "/etc/hostname"}}, {});
  REQUIRE_FALSE(partial.problems.empty());
  CHECK(partial.problems[0].message.find("go together") != std::string::npos);
  auto missing = load_settings({{"COMB_CLUSTER_CERT", "/nonexistent/c.pem"},
                                {"COMB_CLUSTER_KEY", "/etc/hostname"},
                                {"COMB_CLUSTER_CA", "/etc/hostname"},
                                {"COMB_CLUSTER_LISTEN", "10.0.0.5:7801"}}, {});
  REQUIRE(missing.problems.size() == 1);
  CHECK(missing.problems[0].message == "cannot read /nonexistent/c.pem");
  // A node id other pods would refuse in every envelope and handshake.
  CHECK(load_settings({{"COMB_NODE_ID", "pod-a.eu-1"}}, {}).problems.empty());
  for (const std::string& id : {std::string(257, 'n'), std::string("pod a")}) {
    auto bad = load_settings({{"COMB_NODE_ID", id}}, {});
    REQUIRE(bad.problems.size() == 1);
    CHECK(bad.problems[0].option == "cluster.node_id");
  }
  CHECK(loopback_host("127.0.0.1"));
  CHECK_FALSE(loopback_host("127.0.0.1.evil.example"));
  CHECK_FALSE(loopback_host("0.0.0.0"));
}

TEST_CASE("printing never shows a Redis password", "[conf]") {
  auto loaded = load_settings({{"COMB_REDIS_URL", "redis://comb:hunter2@10.0.0.9:6379/1"}}, {});
  CHECK(print_settings(loaded.settings).find("hunter2") == std::string::npos);
}

TEST_CASE("a COMB_ variable no setting reads is named, not the scripts' own", "[conf]") {
  std::map<std::string, std::string> environment{
    {"COMB_MAX_CONECTIONS", "50000"}, {"COMB_MAX_CONNECTIONS", "50000"}, {"COMB_CONFIG", ""},
    {"COMB_TEST_DATABASE_URL", "postgresql://x"}, {"COMB_RELAY_BIN", "/bin/true"}, {"COMB_METRIC_LISTEN", "off"}};
  CHECK(comb::conf::unclaimed_variables(environment)
        == std::vector<std::string>{"COMB_MAX_CONECTIONS", "COMB_METRIC_LISTEN"});
}
