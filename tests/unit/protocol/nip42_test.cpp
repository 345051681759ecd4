// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/event_check.hpp"
#include "protocol/nip42.hpp"
#include "protocol/signature.hpp"

using namespace comb::protocol;

namespace {

event auth_event(std::string challenge, std::string relay, std::int64_t created_at) {
  static const auto user = key_pair::generate();
  event ev;
  ev.pubkey = user.public_key();
  ev.created_at = created_at;
  ev.kind = auth_kind;
  ev.tags = {{"relay", std::move(relay)}, {"challenge", std::move(challenge)}};
  ev.id = compute_id(ev);
  ev.sig = user.sign(ev.id);
  return ev;
}

const auth_expectation expected{"c0ffee", "hive.example.com", 1700000000, 600};

} // namespace

TEST_CASE("a proper AUTH event passes", "[protocol][nip42]") {
  auto ev = auth_event("c0ffee", "wss://hive.example.com/", 1700000100);
  CHECK_FALSE(verify_event(ev));
  CHECK_FALSE(check_auth_event(ev, expected));
  CHECK_FALSE(check_auth_event(auth_event("c0ffee", "ws://HIVE.example.com:80", 1700000000), expected));
}

TEST_CASE("AUTH events that prove the wrong thing are refused", "[protocol][nip42]") {
  CHECK(check_auth_event(auth_event("other", "wss://hive.example.com", 1700000000), expected)->text()
        == "invalid: challenge does not match");
  CHECK(check_auth_event(auth_event("c0ffee", "wss://other.example.com", 1700000000), expected)->text()
        == "invalid: relay tag names another relay");
  CHECK(check_auth_event(auth_event("c0ffee", "wss://hive.example.com", 1700000601), expected)->text()
        == "invalid: created_at is too far from now");
  CHECK(check_auth_event(auth_event("c0ffee", "wss://hive.example.com", 1699999399), expected));
  auto wrong_kind = auth_event("c0ffee", "wss://hive.example.com", 1700000000);
  wrong_kind.kind = 1;
  CHECK(check_auth_event(wrong_kind, expected)->why == reason::invalid);
  auto no_relay = auth_event("c0ffee", "wss://hive.example.com", 1700000000);
  no_relay.tags.erase(no_relay.tags.begin());
  CHECK(check_auth_event(no_relay, expected)->text() == "invalid: missing relay tag");
}

TEST_CASE("challenges are fresh", "[protocol][nip42]") {
  auto a = make_auth_challenge();
  CHECK(a.size() == 32);
  CHECK(a != make_auth_challenge());
}
