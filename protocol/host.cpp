// SPDX-License-Identifier: MIT
#include "protocol/host.hpp"

#include <algorithm>
#include <cctype>

namespace comb::protocol {
namespace {

bool allowed_host_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']';
}

bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5)
    return false;
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return std::stoi(std::string(port)) <= 65535;
}

/// Splits "host:port" or "[v6]:port"; the port is empty when absent.
std::optional<std::pair<std::string_view, std::string_view>> split_port(std::string_view authority) {
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    std::string_view rest = authority.substr(close + 1);
    if (rest == ":" || (!rest.empty() && !rest.starts_with(':')))
      return std::nullopt;
    return std::pair{authority.substr(0, close + 1), rest.empty() ? rest : rest.substr(1)};
  }
  auto colon = authority.find(':');
  if (colon == std::string_view::npos)
    return std::pair{authority, std::string_view()};
  if (colon + 1 == authority.size())
    return std::nullopt;
  return std::pair{authority.substr(0, colon), authority.substr(colon + 1)};
}

} // namespace

std::optional<std::string> normalize_host(std::string_view raw) {
  if (raw.empty() || raw.size() > 255 || !std::all_of(raw.begin(), raw.end(), allowed_host_char))
    return std::nullopt;
  auto parts = split_port(raw);
  if (!parts)
    return std::nullopt;
  auto [name, port] = *parts;
  if (name.ends_with('.'))
    name.remove_suffix(1);
  if (name.empty() || (!name.starts_with('[') && name.find_first_of("[]") != std::string_view::npos))
    return std::nullopt;
  if (!port.empty() && !valid_port(port))
    return std::nullopt;
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!port.empty() && port != "80" && port != "443") {
    out += ':';
    out += port;
  }
  return out;
}

std::optional<std::string> host_of_relay_url(std::string_view url) {
  std::string lowered(url.substr(0, 6));
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t skip = 0;
  if (lowered.starts_with("wss://"))
    skip = 6;
  else if (lowered.starts_with("ws://"))
    skip = 5;
  else
    return std::nullopt;
  std::string_view rest = url.substr(skip);
  auto end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  if (end != std::string_view::npos && rest.substr(end) != "/")
    return std::nullopt;
  return normalize_host(authority);
}

} // namespace comb::protocol
