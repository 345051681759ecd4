// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/community_key.hpp"

using namespace comb::protocol;

namespace {

key_pair relay_key_of(const char* secret_hex) {
  return *key_pair::from_secret(*array_from_hex<32>(secret_hex));
}

} // namespace

TEST_CASE("a community's key is HMAC-SHA256 of its primary host under the relay key", "[community_key]") {
  auto relay = relay_key_of("0000000000000000000000000000000000000000000000000000000000000003");
  auto chat = derive_community_key(relay, "chat.example.org");
  // Python: hmac.new(secret, b"comb community signing key v1\0chat.example.org\0\0", sha256)
  CHECK(to_hex(chat.secret()) == "6af132b6e1feb5bbbbe095e8a70ba23b17417ffdd44b1604a9a7d6a56608444f");
  CHECK(derive_community_key(relay, "chat.example.org").public_key() == chat.public_key());
}

TEST_CASE("communities of one deployment sign with keys of their own", "[community_key]") {
  auto relay = relay_key_of("b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfef");
  auto chat = derive_community_key(relay, "chat.example.org");
  auto games = derive_community_key(relay, "games.example.org");
  CHECK(chat.public_key() != games.public_key());
  CHECK(chat.public_key() != relay.public_key());
  auto other_relay = relay_key_of("0000000000000000000000000000000000000000000000000000000000000003");
  CHECK(derive_community_key(other_relay, "chat.example.org").public_key() != chat.public_key());
}
