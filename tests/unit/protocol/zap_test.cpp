// SPDX-License-Identifier: MIT
#include <algorithm>
#include <catch2/catch.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/hex.hpp"
#include "protocol/zap.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using namespace comb::protocol;
using test::sign_event;

namespace {

constexpr std::int64_t now = 1'700'000'000;
const std::string zapped(64, 'b');

struct zap_fixture {
  key_pair payer = key_pair::generate();
  key_pair lightning_service = key_pair::generate();

  event request(std::vector<tag> tags, std::int64_t at = now - 10) const {
    return sign_event(payer, zap_request_kind, "", std::move(tags), at);
  }
  event receipt(const event& zap_request, std::string p = zapped, std::vector<tag> more = {},
                std::string content = "") const {
    std::vector<tag> tags{{"p", std::move(p)}, {"e", target}, {"P", to_hex(payer.public_key())},
                          {"bolt11", "lnbc1"}, {"description", render_event_json(zap_request)}};
    tags.insert(tags.end(), more.begin(), more.end());
    return sign_event(lightning_service, zap_receipt_kind, std::move(content), std::move(tags), now);
  }
  std::vector<tag> good_tags() const {
    return {{"relays", "wss://other.example", "wss://Hive.Example/"}, {"amount", "21000"}, {"p", zapped},
            {"e", target}};
  }
  const std::string target = std::string(64, 'e');
};

} // namespace

TEST_CASE("a zap receipt is from the signer of the zap request in it, when that request names this relay",
          "[unit][protocol][zap]") {
  zap_fixture f;
  auto sender = zap_sender(f.receipt(f.request(f.good_tags())), "hive.example", now);
  REQUIRE(sender);
  CHECK(*sender == f.payer.public_key());
}

TEST_CASE("a zap receipt vouches for nobody when its zap request is not one this relay can trust",
          "[unit][protocol][zap]") {
  zap_fixture f;
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags())), "elsewhere.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request({{"relays", "wss://other.example"}, {"p", zapped}})), "hive.example", now));
  // Zapping someone else than the receipt says.
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), std::string(64, 'c')), "hive.example", now));
  // Too old, or from the future.
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags(), now - max_zap_request_age_seconds - 1)), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags(), now + 3600)), "hive.example", now));
  // A request whose signature does not match its content.
  auto forged = f.request(f.good_tags());
  forged.pubkey = key_pair::generate().public_key();
  CHECK_FALSE(zap_sender(f.receipt(forged), "hive.example", now));
  // Not a zap request, not JSON, no description, not a receipt.
  // A receipt that is more than its request's: content, tags of its own, another target.
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {}, "buy now"), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"h", "general"}}), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"e", std::string(64, 'f')}}), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"P", std::string(64, 'a')}}), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"description", "{}"}}), "hive.example", now));
  auto no_target = f.good_tags();
  no_target.pop_back();
  CHECK_FALSE(zap_sender(f.receipt(f.request(no_target)), "hive.example", now)); // the receipt names e
  // NIP-57's own optional tags are fine.
  const std::string preimage(64, '0');
  CHECK(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"preimage", preimage}, {"k", "9"}}), "hive.example", now));
  // Each at most once, an invoice of a few KiB, a preimage of 32 bytes.
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"preimage", "00"}}), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"preimage", preimage}, {"preimage", preimage}}), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"k", "9"}, {"k", "1"}}), "hive.example", now));
  CHECK_FALSE(zap_sender(f.receipt(f.request(f.good_tags()), zapped, {{"bolt11", "lnbc2"}}), "hive.example", now));
  auto long_invoice = f.receipt(f.request(f.good_tags()));
  for (auto& t : long_invoice.tags)
    if (t[0] == "bolt11")
      t[1] = "lnbc" + std::string(5000, 'q');
  long_invoice = sign_event(f.lightning_service, zap_receipt_kind, "", long_invoice.tags, now);
  CHECK_FALSE(zap_sender(long_invoice, "hive.example", now));
  auto note = sign_event(f.payer, 1, "", f.good_tags(), now - 10);
  CHECK_FALSE(zap_sender(f.receipt(note), "hive.example", now));
  auto receipt = f.receipt(f.request(f.good_tags()));
  for (const char* description : {"", "{", "[]", "{\"kind\":9734}", "[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]"}) {
    auto bad = receipt;
    bad.tags.back()[1] = description;
    CHECK_FALSE(zap_sender(bad, "hive.example", now));
  }
  auto bare = receipt;
  bare.tags.erase(std::remove_if(bare.tags.begin(), bare.tags.end(), [](const tag& t) { return t[0] == "description"; }),
                  bare.tags.end());
  CHECK_FALSE(zap_sender(bare, "hive.example", now));
  auto other_kind = receipt;
  other_kind.kind = 1;
  CHECK_FALSE(zap_sender(other_kind, "hive.example", now));
}
