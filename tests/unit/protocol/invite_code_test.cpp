// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/invite_code.hpp"

using comb::protocol::typed_invite_code;

TEST_CASE("a claim is its code as typed or pasted: blanks around it, or a whole invite link",
          "[protocol][nip43]") {
  const std::string code = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
  CHECK(typed_invite_code(code) == code);
  CHECK(typed_invite_code(" " + code + "\n") == code);
  // Flotilla's SpaceInvite link, as people are given it, pasted into the code box.
  CHECK(typed_invite_code("https://app.flotilla.social/join?r=hive.example&c=" + code) == code);
  CHECK(typed_invite_code("https://app.flotilla.social/join?c=" + code + "&r=hive.example\n") == code);
  CHECK(typed_invite_code("HTTP://localhost:1847/join?r=127.0.0.1%3A7777&c=" + code) == code);
  // A chosen code (createclaim) travels URL-encoded in the link.
  CHECK(typed_invite_code("https://app.example/join?r=hive.example&c=summer%20party%26more") == "summer party&more");
  // Anything else is the code as it is: a link without a code, other schemes, plain words.
  CHECK(typed_invite_code("https://app.example/join?r=hive.example") == "https://app.example/join?r=hive.example");
  CHECK(typed_invite_code("https://app.example/join?r=x&c=") == "https://app.example/join?r=x&c=");
  CHECK(typed_invite_code("nostr:join?c=abc") == "nostr:join?c=abc");
  CHECK(typed_invite_code("c=abc") == "c=abc");
  CHECK(typed_invite_code("  ") == "");
}
