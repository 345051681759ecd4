// SPDX-License-Identifier: MIT
#pragma once

#include <catch2/catch.hpp>
#include <vector>

#include "protocol/event.hpp"

namespace comb::test {

/// A relay-signed room record's tags without the `salt` that comes last in each
/// (protocol/room_events.cpp): what a test compares is the rest.
inline std::vector<protocol::tag> unsalted(std::vector<protocol::tag> tags) {
  REQUIRE_FALSE(tags.empty());
  CHECK(tags.back().size() == 2);
  CHECK(tags.back().front() == "salt");
  tags.pop_back();
  return tags;
}

} // namespace comb::test
