// SPDX-License-Identifier: MIT
// A room request applied straight to the store, for cli tests that need rooms to show.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "protocol/canonical_json.hpp"
#include "protocol/room.hpp"
#include "storage/room_store.hpp"
#include "support/signed_events.hpp"

namespace comb::test {

/// Applies a room request signed by `who` (jumping over seconds a room's state must wait for).
inline protocol::room_outcome room_request(storage::room_store& rooms, std::int64_t community,
                                           const protocol::key_pair& who, std::uint32_t kind,
                                           std::vector<protocol::tag> tags, std::int64_t& now) {
  auto ev = sign_event(who, kind, "", std::move(tags), now);
  auto request = protocol::parse_room_request(ev);
  REQUIRE(request);
  storage::room_command command{ev, protocol::render_event_json(ev), request.value()};
  for (;;) {
    auto write = rooms.apply(community, command, now);
    if (write.retry_at == 0)
      return write.outcome;
    now = write.retry_at;
  }
}

} // namespace comb::test
