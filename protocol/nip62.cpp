// SPDX-License-Identifier: MIT
#include "protocol/nip62.hpp"

#include <algorithm>

#include "protocol/host.hpp"

namespace comb::protocol {

namespace {

bool is_relay_tag(const tag& t) { return t.size() >= 2 && t[0] == "relay"; }

} // namespace

vanish_reach reach_of_vanish_request(const event& ev) {
  vanish_reach reach;
  for (const auto& t : ev.tags) {
    if (!is_relay_tag(t))
      continue;
    if (t[1] == all_relays)
      reach.all_relays = true;
    else if (auto named = host_of_relay_url(t[1]))
      reach.hosts.push_back(std::move(*named));
  }
  std::sort(reach.hosts.begin(), reach.hosts.end());
  reach.hosts.erase(std::unique(reach.hosts.begin(), reach.hosts.end()), reach.hosts.end());
  return reach;
}

std::optional<rejection> check_vanish_request(const event& ev, std::string_view host) {
  const vanish_reach reach = reach_of_vanish_request(ev);
  if (reach.all_relays || std::binary_search(reach.hosts.begin(), reach.hosts.end(), host))
    return std::nullopt;
  bool any_relay = std::any_of(ev.tags.begin(), ev.tags.end(), is_relay_tag);
  return invalid(any_relay ? "this request to vanish names other relays"
                           : "a request to vanish needs a relay tag");
}

} // namespace comb::protocol
