// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/gift_wraps.hpp"
#include "protocol/hex.hpp"

using namespace comb::protocol;

namespace {

bytes32 key(std::uint8_t seed) {
  bytes32 k{};
  k.fill(seed);
  return k;
}

filter wraps_for(std::vector<std::string> recipients) {
  filter f;
  f.kinds = std::vector<std::uint32_t>{1059};
  f.tags.push_back({'p', std::move(recipients)});
  return f;
}

event wrap_to(const bytes32& recipient) {
  event ev;
  ev.kind = 1059;
  ev.tags = {{"p", to_hex(recipient)}};
  return ev;
}

} // namespace

TEST_CASE("gift wraps are read only by the recipient a filter names alone", "[protocol][gift_wraps]") {
  const auto bob = key(2);
  std::vector<filter> mine{wraps_for({to_hex(bob)})};
  CHECK_FALSE(guard_gift_wraps(mine, bob));
  CHECK_FALSE(mine[0].gift_wraps_hidden);
  CHECK(matches(mine[0], wrap_to(bob)));

  std::vector<filter> anonymous{wraps_for({to_hex(bob)})};
  auto refused = guard_gift_wraps(anonymous, std::nullopt);
  REQUIRE(refused);
  CHECK(refused->why == reason::auth_required);

  std::vector<filter> someone_else{wraps_for({to_hex(bob)})};
  refused = guard_gift_wraps(someone_else, key(3));
  REQUIRE(refused);
  CHECK(refused->why == reason::restricted);

  // Naming the reader and another is not naming the reader alone.
  std::vector<filter> shared{wraps_for({to_hex(bob), to_hex(key(3))})};
  CHECK(guard_gift_wraps(shared, bob));

  std::vector<filter> ephemeral{wraps_for({to_hex(bob)})};
  ephemeral[0].kinds = std::vector<std::uint32_t>{1, 21059};
  CHECK(guard_gift_wraps(ephemeral, key(3)));
}

TEST_CASE("a filter that does not ask for gift wraps is narrowed to match none", "[protocol][gift_wraps]") {
  const auto bob = key(2);
  filter broad;
  filter by_recipient;
  by_recipient.tags.push_back({'p', {to_hex(bob)}});
  filter notes;
  notes.kinds = std::vector<std::uint32_t>{1};
  std::vector<filter> filters{broad, by_recipient, notes};
  CHECK_FALSE(guard_gift_wraps(filters, key(3)));
  CHECK(filters[0].gift_wraps_hidden);
  CHECK(filters[1].gift_wraps_hidden);
  CHECK_FALSE(matches(filters[0], wrap_to(bob)));
  CHECK_FALSE(matches(filters[1], wrap_to(bob)));
  event note = wrap_to(bob);
  note.kind = 1;
  CHECK(matches(filters[0], note));
  CHECK(matches(filters[1], note));

  // The recipient's own `#p` filter without kinds reads its wraps.
  std::vector<filter> own{by_recipient};
  CHECK_FALSE(guard_gift_wraps(own, bob));
  CHECK(matches(own[0], wrap_to(bob)));
}

TEST_CASE("a REQ held for AUTH is guarded again for the reader it then has", "[protocol][gift_wraps]") {
  const auto bob = key(2);
  filter by_recipient;
  by_recipient.tags.push_back({'p', {to_hex(bob)}});
  // Anonymous: the first filter is narrowed, the second refused for AUTH.
  std::vector<filter> filters{by_recipient, wraps_for({to_hex(bob)})};
  auto refused = guard_gift_wraps(filters, std::nullopt);
  REQUIRE(refused);
  CHECK(refused->why == reason::auth_required);
  // The same filters once bob has authenticated: both read his wraps.
  CHECK_FALSE(guard_gift_wraps(filters, bob));
  CHECK_FALSE(filters[0].gift_wraps_hidden);
  CHECK(matches(filters[0], wrap_to(bob)));
}
