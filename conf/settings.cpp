// SPDX-License-Identifier: MIT
#include "conf/settings.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "conf/ip_network.hpp"
#include "conf/options.hpp"
#include "protocol/address.hpp"
#include "protocol/host.hpp"
#include "protocol/nip19.hpp"

extern char** environ;

namespace comb::conf {
namespace {

const option* find_option(std::string_view key) {
  for (const auto& o : all_options())
    if (o.key == key)
      return &o;
  return nullptr;
}

void apply(relay_settings& s, const option& o, std::string_view value, std::string_view origin,
           std::vector<setting_problem>& problems) {
  if (auto error = o.set(s, value))
    problems.push_back({o.key, std::string(origin) + ": " + *error});
}

std::optional<std::string> toml_text(const toml::node& node) {
  if (auto v = node.value<std::string>())
    return *v;
  if (auto v = node.value_exact<std::int64_t>())
    return std::to_string(*v);
  if (auto v = node.value_exact<double>()) {
    std::ostringstream out;
    out << *v;
    return out.str();
  }
  if (auto v = node.value_exact<bool>())
    return *v ? "true" : "false";
  if (const auto* array = node.as_array()) {
    std::string joined;
    for (const auto& item : *array) {
      auto text = item.value<std::string>();
      if (!text)
        return std::nullopt;
      joined += (joined.empty() ? "" : ",") + *text;
    }
    return joined;
  }
  return std::nullopt;
}

void apply_file(relay_settings& s, const std::string& path, std::vector<setting_problem>& problems) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream message;
    message << path << ":" << e.source().begin.line << ": " << e.description();
    problems.push_back({"config", message.str()});
    return;
  }
  for (const auto& [section, node] : table) {
    const auto* inner = node.as_table();
    if (!inner) {
      problems.push_back({std::string(section.str()), path + ": expected a [section]"});
      continue;
    }
    for (const auto& [name, value] : *inner) {
      std::string key = std::string(section.str()) + "." + std::string(name.str());
      const option* o = find_option(key);
      if (!o) {
        problems.push_back({key, path + ": unknown option"});
        continue;
      }
      auto text = toml_text(value);
      if (!text)
        problems.push_back({key, path + ": unsupported value type"});
      else
        apply(s, *o, *text, path, problems);
    }
  }
}

/// The host of an address without brackets; empty when it is not one (reported by validate).
std::string host_of(const std::string& address) {
  auto parsed = protocol::parse_host_port(address);
  return parsed ? parsed->host : std::string();
}

/// A `host:port` setting: the problem names the setting and says what is wrong.
void check_host_and_port(std::string_view option, std::string_view env, const std::string& value,
                         std::vector<setting_problem>& problems) {
  if (auto parsed = protocol::parse_host_and_port(value); !parsed)
    problems.push_back({std::string(option), std::string(env) + "=\"" + value
                                               + "\" must be host:port, e.g. 127.0.0.1:7777: "
                                               + parsed.error()});
}

/// Every address setting, so a typo stops the start before anything is created. COMB_REDIS_URL
/// is checked by actors::bridge_settings_problem (also before anything is created), which
/// knows how to show it without its password.
void validate_addresses(const relay_settings& s, std::vector<setting_problem>& problems) {
  check_host_and_port("server.listen", "COMB_LISTEN", s.listen, problems);
  if (s.metrics_listen != "off")
    check_host_and_port("server.metrics_listen", "COMB_METRICS_LISTEN", s.metrics_listen, problems);
  if (!s.cluster_listen.empty())
    check_host_and_port("cluster.listen", "COMB_CLUSTER_LISTEN", s.cluster_listen, problems);
  for (const auto& peer : s.cluster_peers)
    check_host_and_port("cluster.peers", "COMB_CLUSTER_PEERS", peer, problems);
  if (!s.public_url.empty() && !protocol::host_of_relay_url(s.public_url))
    problems.push_back({"server.public_url", "COMB_PUBLIC_URL=\"" + s.public_url
                                               + "\" must be a ws:// or wss:// URL with no path"});
}

bool readable(const std::string& path) {
  std::ifstream file(path);
  return file.good();
}

/// Mutual TLS needs all three files; without them, links stay on this host.
void validate_cluster(const relay_settings& s, std::vector<setting_problem>& problems) {
  const int given = !s.cluster_cert.empty() + !s.cluster_key.empty() + !s.cluster_ca.empty();
  if (given != 0 && given != 3)
    problems.push_back({"cluster.cert", "COMB_CLUSTER_CERT, COMB_CLUSTER_KEY and COMB_CLUSTER_CA "
                                        "go together (comb-admin cluster issue makes them)"});
  for (const auto* path : {&s.cluster_cert, &s.cluster_key, &s.cluster_ca})
    if (!path->empty() && !readable(*path))
      problems.push_back({"cluster.cert", "cannot read " + *path});
  // As envelopes and the cluster handshake take a node id (storage::max_origin_bytes): another
  // would be refused by every other pod.
  if (s.node_id.size() > 256
      || std::ranges::any_of(s.node_id, [](char c) { return c <= ' ' || c >= 0x7f; }))
    problems.push_back({"cluster.node_id", "COMB_NODE_ID must be at most 256 printable characters"
                                           " without spaces"});
  if (given == 3)
    return;
  std::vector<std::string> addresses = s.cluster_peers;
  if (!s.cluster_listen.empty())
    addresses.push_back(s.cluster_listen);
  for (const auto& address : addresses)
    if (auto host = host_of(address); !host.empty() && !loopback_host(host))
      problems.push_back({"cluster.listen", "cluster link " + address + " is not on loopback: "
                          "links between hosts need mutual TLS (COMB_CLUSTER_CERT, "
                          "COMB_CLUSTER_KEY, COMB_CLUSTER_CA; see docs/operations.md)"});
}

void validate(const relay_settings& s, std::vector<setting_problem>& problems) {
  validate_addresses(s, problems);
  validate_cluster(s, problems);
  if (!s.owner_pubkey.empty() && !protocol::parse_public_key(s.owner_pubkey))
    problems.push_back({"community.owner_pubkey", "must be 64 lowercase hex characters or an npub"});
  if (s.limits.max_filters_per_req == 0)
    problems.push_back({"limits.max_filters", "must be at least 1"});
  if (auto parsed = parse_networks(s.trusted_proxies); !parsed.bad_entry.empty())
    problems.push_back({"server.trusted_proxies",
                        "\"" + parsed.bad_entry + "\" is not an address or CIDR (e.g. 10.0.0.0/8)"});
}

} // namespace

bool cluster_tls(const relay_settings& s) {
  return !s.cluster_cert.empty() && !s.cluster_key.empty() && !s.cluster_ca.empty();
}

bool loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1")
    return true;
  return host.starts_with("127.") && host.find_first_not_of("0123456789.") == std::string_view::npos;
}

std::string relay_settings::effective_public_url() const {
  return public_url.empty() ? "ws://" + listen : public_url;
}

std::string relay_settings::effective_relay_key_file() const {
  return relay_key_file.empty() ? data_dir + "/relay.key" : relay_key_file;
}

load_result load_settings(const std::map<std::string, std::string>& environment,
                          const std::map<std::string, std::string>& overrides,
                          const std::string& fallback_file) {
  load_result out;
  auto& s = out.settings;
  std::string file;
  bool named = false;
  if (auto it = environment.find("COMB_CONFIG"); it != environment.end()) {
    file = it->second;
    named = true;
  }
  if (auto it = overrides.find("config"); it != overrides.end()) {
    file = it->second;
    named = true;
  }
  if (!named && !fallback_file.empty() && readable(fallback_file))
    file = fallback_file; // an installed service: comb-relay with no arguments reads it
  else if (!named && !fallback_file.empty() && std::filesystem::exists(fallback_file))
    out.problems.push_back({"config", "cannot read " + fallback_file + " (its mode, or its owner?)"});
  if (!file.empty()) {
    s.config_file = file;
    apply_file(s, file, out.problems);
  }
  for (const auto& o : all_options())
    if (auto it = environment.find(o.env); it != environment.end())
      apply(s, o, it->second, o.env, out.problems);
  for (const auto& [key, value] : overrides) {
    if (key == "config")
      continue;
    if (const option* o = find_option(key))
      apply(s, *o, value, "--" + key, out.problems);
    else
      out.problems.push_back({key, "unknown option"});
  }
  validate(s, out.problems);
  return out;
}

std::map<std::string, std::string> comb_environment() {
  std::map<std::string, std::string> out;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    auto equals = text.find('=');
    if (equals != std::string_view::npos && text.starts_with("COMB_"))
      out.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return out;
}

std::vector<std::string> unclaimed_variables(const std::map<std::string, std::string>& environment) {
  // What comb's own scripts and tests set beside the relay's settings.
  auto tooling = [](std::string_view name) {
    for (std::string_view own : {"COMB_CONFIG", "COMB_PORT", "COMB_WERROR", "COMB_FUZZ_SECONDS", "COMB_NODE",
                                 "COMB_SOURCE_DIR", "COMB_STRFRY_DIR", "COMB_REDIS_SERVER", "COMB_MULTIPROCESS_FILES",
                                 "COMB_JOINS_PER_SECOND", "COMB_JOIN_SECONDS"})
      if (name == own)
        return true;
    return name.starts_with("COMB_TEST_") || name.starts_with("COMB_BUILD_") || name.starts_with("COMB_BENCH_")
           || name.ends_with("_BIN");
  };
  std::vector<std::string> out;
  for (const auto& [name, value] : environment) {
    bool claimed = std::ranges::any_of(all_options(), [&](const option& o) { return o.env == name; });
    if (!claimed && !tooling(name))
      out.push_back(name);
  }
  return out;
}

std::string print_settings(const relay_settings& settings) {
  std::ostringstream out;
  std::string section;
  for (const auto& o : all_options()) {
    auto dot = o.key.find('.');
    std::string this_section = o.key.substr(0, dot);
    if (this_section != section) {
      out << (section.empty() ? "" : "\n") << "[" << this_section << "]\n";
      section = this_section;
    }
    std::string value = o.show(settings);
    if (o.secret && !value.empty())
      value = "********";
    out << o.key.substr(dot + 1) << " = \"" << value << "\"  # " << o.env << "\n";
  }
  return out.str();
}

} // namespace comb::conf
