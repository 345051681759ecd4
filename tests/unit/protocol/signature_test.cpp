// SPDX-License-Identifier: MIT
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "protocol/signature.hpp"
#include "support/test_data.hpp"

using namespace comb::protocol;

namespace {

struct bip340_row {
  std::string index, secret, pubkey, aux, message, signature, result;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<bip340_row> read_vectors() {
  std::istringstream in(comb::test::read_file(comb::test::data_path("bip340_vectors.csv")));
  std::string line;
  std::getline(in, line); // header
  std::vector<bip340_row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    std::string cell;
    while (std::getline(fields, cell, ','))
      cells.push_back(lower(cell));
    cells.resize(8);
    rows.push_back({cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]});
  }
  return rows;
}

} // namespace

TEST_CASE("the official BIP-340 vectors verify exactly as expected", "[protocol][signature]") {
  auto rows = read_vectors();
  REQUIRE(rows.size() == 15);
  for (const auto& row : rows) {
    INFO("vector " << row.index);
    auto pubkey = array_from_hex<32>(row.pubkey);
    auto message = array_from_hex<32>(row.message);
    auto signature = array_from_hex<64>(row.signature);
    REQUIRE(pubkey);
    REQUIRE(message);
    REQUIRE(signature);
    CHECK(verify_schnorr(*pubkey, *message, *signature) == (row.result == "true"));
  }
}

TEST_CASE("signing the BIP-340 vectors reproduces their keys and signatures",
          "[protocol][signature]") {
  for (const auto& row : read_vectors()) {
    if (row.secret.empty())
      continue;
    INFO("vector " << row.index);
    auto pair = key_pair::from_secret(*array_from_hex<32>(row.secret));
    REQUIRE(pair);
    CHECK(to_hex(pair->public_key()) == row.pubkey);
    auto signature = pair->sign(*array_from_hex<32>(row.message), *array_from_hex<32>(row.aux));
    CHECK(to_hex(signature) == row.signature);
  }
}

TEST_CASE("a zero or out-of-range secret makes no key pair", "[protocol][signature]") {
  CHECK_FALSE(key_pair::from_secret(bytes32{}));
  bytes32 all_ones;
  all_ones.fill(0xff);
  CHECK_FALSE(key_pair::from_secret(all_ones));
}

TEST_CASE("a generated key pair signs what it verifies", "[protocol][signature]") {
  auto pair = key_pair::generate();
  bytes32 message{};
  message[0] = 42;
  auto signature = pair.sign(message);
  CHECK(verify_schnorr(pair.public_key(), message, signature));
  message[0] = 43;
  CHECK_FALSE(verify_schnorr(pair.public_key(), message, signature));
}
