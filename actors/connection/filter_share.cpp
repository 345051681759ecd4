// SPDX-License-Identifier: MIT
#include "actors/connection/filter_share.hpp"

#include <string>

namespace comb::actors {

protocol::rejection refusal_of(const filter_share_refusal& refused, const filter_holding& address_most) {
  using protocol::reason;
  if (refused.pod)
    return {reason::rate_limited, "the relay holds as many subscriptions as it may, try again later"};
  auto from_address = [](std::size_t bound) { return " from your address (at most " + std::to_string(bound) + ")"; };
  switch (refused.bound) {
    case filter_bound::filters: return {reason::rate_limited, "too many filters" + from_address(address_most.filters)};
    case filter_bound::values: return {reason::rate_limited, "too many filter values" + from_address(address_most.values)};
    case filter_bound::broad: break;
  }
  return {reason::rate_limited, "too many filters without ids, authors, kinds or tags" + from_address(address_most.broad)};
}

} // namespace comb::actors
