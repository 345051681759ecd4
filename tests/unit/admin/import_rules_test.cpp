// SPDX-License-Identifier: MIT
// What comb-admin import stores in a closed community: members' events, and those another key
// signs for a member (a gift wrap, a zap receipt), as a connection admits them.
#include <catch2/catch.hpp>
#include <set>

#include "admin/import_rules.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/hex.hpp"
#include "support/signed_events.hpp"

using namespace comb;

namespace {

const auto member = protocol::key_pair::generate();
const auto stranger = protocol::key_pair::generate();
const auto throwaway = protocol::key_pair::generate();
const auto lightning = protocol::key_pair::generate();

/// A receipt, published by `lightning`, of a zap `payer` requested on another relay, long ago.
protocol::event receipt_of_zap_by(const protocol::key_pair& payer, std::int64_t at) {
  const auto zapped = protocol::to_hex(stranger.public_key());
  auto request = test::sign_event(payer, 9734, "", {{"relays", "wss://old-relay.example"}, {"p", zapped}}, at);
  return test::sign_event(lightning, 9735, "",
                          {{"p", zapped}, {"description", protocol::render_event_json(request)}}, at + 5);
}

} // namespace

TEST_CASE("a closed community's import keeps a member's gift wraps and zap receipts", "[admin][import]") {
  const std::set<protocol::bytes32> members{member.public_key()};
  const auto now = test::unix_now();
  const admin::import_policy policy;
  auto refusal_of = [&](const protocol::event& ev) { return admin::import_refusal(ev, now, policy, &members); };
  auto wrap_for = [&](const protocol::key_pair& to) {
    return test::sign_event(throwaway, 1059, "sealed", {{"p", protocol::to_hex(to.public_key())}}, now - 3600);
  };
  CHECK_FALSE(refusal_of(wrap_for(member)));
  CHECK_FALSE(refusal_of(receipt_of_zap_by(member, now - 30 * 86400)));
  CHECK_FALSE(refusal_of(test::sign_event(member, 1, "a note", {}, now - 60)));
  // Addressed to, or zapped by, someone else: the author's standing decides, as before.
  auto refused_wrap = refusal_of(wrap_for(stranger));
  REQUIRE(refused_wrap);
  CHECK(refused_wrap->reason == "not_a_member");
  auto refused_zap = refusal_of(receipt_of_zap_by(stranger, now - 86400));
  REQUIRE(refused_zap);
  CHECK(refused_zap->reason == "not_a_member");
}
