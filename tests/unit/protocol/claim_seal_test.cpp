// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/claim_seal.hpp"
#include "protocol/hex.hpp"

using namespace comb::protocol;

TEST_CASE("a sealed invite code opens only with its relay key, for its community, untouched",
          "[protocol][claims]") {
  auto relay = key_pair::generate();
  auto sealed = seal_claim(relay, 7, "41970534216794373");
  CHECK(sealed.find("41970534216794373") == std::string::npos);
  CHECK(open_claim(relay, 7, sealed) == "41970534216794373");
  CHECK(seal_claim(relay, 7, "41970534216794373") != sealed); // a fresh nonce each time

  CHECK_FALSE(open_claim(relay, 8, sealed));                      // moved to another community's row
  CHECK_FALSE(open_claim(key_pair::generate(), 7, sealed));       // another deployment's key
  for (std::size_t at : {std::size_t{0}, std::size_t{30}, sealed.size() - 1}) {
    auto tampered = sealed;
    tampered[at] = tampered[at] == '0' ? '1' : '0';
    CHECK_FALSE(open_claim(relay, 7, tampered));
  }
  for (std::string_view garbage : {"", "00", "not hex at all", "ABCDEF"})
    CHECK_FALSE(open_claim(relay, 7, garbage));
  CHECK_FALSE(open_claim(relay, 7, sealed.substr(0, sealed.size() - 2)));
  CHECK(open_claim(relay, 7, seal_claim(relay, 7, "")) == "");
}

TEST_CASE("a chosen code's lookup hash is keyed by the relay key and bound to its community",
          "[protocol][claims]") {
  auto relay = key_pair::generate();
  auto hash = claim_lookup_hash(relay, 7, "41970534216794373");
  CHECK(hash.size() == 64);
  CHECK(hash.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(claim_lookup_hash(relay, 7, "41970534216794373") == hash); // found again by the same code
  // Fixed: every stored chosen code is found by it, so a change of label or encoding would lose
  // them all on upgrade. HMAC-SHA256(HMAC-SHA256(secret, label), 8-byte big-endian id || code).
  std::string ones;
  for (int i = 0; i < 32; ++i)
    ones += "01";
  CHECK(claim_lookup_hash(*key_pair::from_secret(*array_from_hex<32>(ones)), 7, "41970534216794373")
        == "940f0a4d38c48b4d59f241f9de5e41d343ee0e69a0c0f59bb049b685732ff3e1");
  CHECK(claim_lookup_hash(key_pair::generate(), 7, "41970534216794373") != hash);
  CHECK(claim_lookup_hash(relay, 8, "41970534216794373") != hash);
  CHECK(claim_lookup_hash(relay, 7, "41970534216794374") != hash);
}
