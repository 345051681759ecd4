// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/kind_rules.hpp"

using namespace comb::protocol;

TEST_CASE("relay-signed kinds: NIP-43 lists, deltas, roles, join reply, NIP-29 group state", "[kinds]") {
  for (std::uint32_t kind : {13534u, 8000u, 8001u, 28935u, 33534u, 39000u, 39003u, 39005u})
    CHECK(relay_signed_kind(kind));
  for (std::uint32_t kind : {0u, 1u, 5u, 7999u, 8002u, 13533u, 28934u, 33533u, 38999u, 39006u})
    CHECK_FALSE(relay_signed_kind(kind));
}

TEST_CASE("state requests: joins, leaves, NIP-29 moderation, member commands", "[kinds]") {
  for (std::uint32_t kind : {28934u, 28936u, 9000u, 9010u, 9022u, 9030u, 9031u, 9032u})
    CHECK(state_request_kind(kind));
  for (std::uint32_t kind : {1u, 8999u, 9023u, 9029u, 9033u, 9735u, 28935u, 22242u})
    CHECK_FALSE(state_request_kind(kind));
}

TEST_CASE("deletion targets count e and a tags with a value", "[kinds]") {
  event ev;
  ev.kind = 5;
  ev.tags = {{"e", "x"}, {"a", "1:2:3"}, {"e"}, {"p", "y"}, {"k", "1"}};
  CHECK(deletion_targets(ev) == 2);
}

TEST_CASE("a repost embedding another author's protected event is recognised (NIP-70)", "[protocol][nip70]") {
  event repost;
  repost.kind = 6;
  repost.pubkey.fill(0xbb);
  const std::string other(64, 'a');
  repost.content = R"({"kind":1,"pubkey":")" + other + R"(","tags":[["-"]],"content":"mine only"})";
  CHECK(reposts_protected_event(repost));
  repost.kind = 16; // a generic repost
  CHECK(reposts_protected_event(repost));
  repost.kind = 1; // not a repost
  CHECK_FALSE(reposts_protected_event(repost));
  repost.kind = 6;
  // Its author may repost it; an unprotected event, no content, or content that is no event pass.
  repost.content = R"({"kind":1,"pubkey":")" + std::string(64, 'b') + R"(","tags":[["-"]]})";
  CHECK_FALSE(reposts_protected_event(repost));
  for (const char* content : {R"({"kind":1,"pubkey":"aa","tags":[["t","-"]]})", "", "not json", "[1,2]",
                              R"({"tags":"-"})", R"({"tags":[[],5,[1]]})"}) {
    repost.content = content;
    CHECK_FALSE(reposts_protected_event(repost));
  }
}
