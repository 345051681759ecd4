// SPDX-License-Identifier: MIT
#include "protocol/nip62.hpp"

#include "protocol/host.hpp"

namespace comb::protocol {

std::optional<rejection> check_vanish_request(const event& ev, std::string_view host) {
  bool any_relay = false;
  for (const auto& t : ev.tags) {
    if (t.size() < 2 || t[0] != "relay")
      continue;
    any_relay = true;
    if (t[1] == all_relays)
      return std::nullopt;
    if (auto named = host_of_relay_url(t[1]); named && *named == host)
      return std::nullopt;
  }
  return invalid(any_relay ? "this request to vanish names other relays"
                           : "a request to vanish needs a relay tag");
}

} // namespace comb::protocol
