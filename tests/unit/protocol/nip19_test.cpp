// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "protocol/nip19.hpp"
#include "protocol/signature.hpp"
#include "support/test_data.hpp"

using namespace comb::protocol;

TEST_CASE("npub and nsec agree with nostr-tools", "[protocol][nip19]") {
  auto vectors =
    boost::json::parse(comb::test::read_file(comb::test::data_path("nostr_tools_vectors.json")))
      .as_array();
  for (const auto& vector : vectors) {
    const auto& v = vector.as_object();
    std::string secret(v.at("secret").as_string());
    std::string pubkey(v.at("event").at("pubkey").as_string());
    std::string npub(v.at("npub").as_string());
    std::string nsec(v.at("nsec").as_string());
    CHECK(encode_nip19("npub", *array_from_hex<32>(pubkey)) == npub);
    CHECK(encode_nip19("nsec", *array_from_hex<32>(secret)) == nsec);
    CHECK(parse_public_key(npub) == array_from_hex<32>(pubkey));
    CHECK(parse_secret_key(nsec) == array_from_hex<32>(secret));
    CHECK(parse_public_key(pubkey) == array_from_hex<32>(pubkey));
  }
}

TEST_CASE("bad bech32 keys are refused", "[protocol][nip19]") {
  auto pair = key_pair::generate();
  std::string npub = encode_nip19("npub", pair.public_key());
  CHECK(decode_nip19(npub, "npub") == pair.public_key());
  std::string flipped = npub;
  flipped[10] = flipped[10] == 'q' ? 'p' : 'q';
  CHECK_FALSE(decode_nip19(flipped, "npub"));
  CHECK_FALSE(decode_nip19(npub, "nsec"));
  CHECK_FALSE(decode_nip19(npub.substr(0, npub.size() - 1), "npub"));
  CHECK_FALSE(parse_public_key("npub1"));
  CHECK_FALSE(parse_public_key(std::string(64, 'A')));
  CHECK_FALSE(parse_secret_key("nsec1qqqq"));
}
