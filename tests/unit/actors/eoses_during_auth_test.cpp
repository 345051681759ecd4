// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "actors/connection/eoses_during_auth.hpp"

using comb::actors::eoses_during_auth;
using sent_list = std::vector<std::pair<std::string, std::uint64_t>>;

TEST_CASE("EOSEs are sent again once, on the first REQ sent again after the OK", "[actors][auth]") {
  eoses_during_auth eoses;
  eoses.sent("a", 1, 0);
  eoses.sent("b", 2, 0.1);
  eoses.sent("a", 3, 0.2); // "a" again, under a newer REQ: one entry
  CHECK(eoses.on_req("a", 0.3).empty()); // no AUTH yet: nothing was lost to it
  eoses.auth_ok(1, {"a", "b"});
  CHECK(eoses.on_req("new", 1.5).empty()); // not one sent again
  CHECK(eoses.on_req("b", 2) == sent_list{{"a", 3}});
  CHECK(eoses.on_req("a", 2.1).empty()); // once only
}

TEST_CASE("EOSEs are remembered only while an AUTH, then a REQ sent again, may still come",
          "[actors][auth][bounds]") {
  eoses_during_auth anonymous;
  anonymous.sent("a", 1, 0);
  anonymous.sent("b", 2, eoses_during_auth::auth_expected_within_seconds + 1); // none came: forgotten
  anonymous.auth_ok(30, {"a", "b"});
  CHECK(anonymous.on_req("a", 31).empty());

  eoses_during_auth late;
  late.sent("a", 1, 0);
  late.sent("b", 2, 0);
  late.auth_ok(1, {"a", "b"});
  CHECK(late.on_req("b", 2 + eoses_during_auth::resend_window_seconds).empty());

  eoses_during_auth many;
  for (std::size_t i = 0; i < eoses_during_auth::max_kept + 50; ++i)
    many.sent("s" + std::to_string(i), i, 0);
  many.auth_ok(1, {});
  auto lost = many.on_req("s0", 2);
  CHECK(lost.size() == eoses_during_auth::max_kept - 1);
}

TEST_CASE("a REQ sent again while its first still waits for its history brings back the EOSEs lost",
          "[actors][auth]") {
  // A space opens with many REQs: the first ones were answered before the OK (their EOSEs lost),
  // the last ones, which welshman sends again, still wait for a storage reader.
  eoses_during_auth eoses;
  eoses.sent("early-1", 1, 0);
  eoses.sent("early-2", 2, 0.1);
  eoses.auth_ok(1, {"early-1", "early-2", "late-1", "late-2"});
  CHECK(eoses.on_req("new", 1.2).empty()); // opened after the OK: not one sent again
  CHECK(eoses.on_req("late-2", 1.5) == sent_list{{"early-1", 1}, {"early-2", 2}});
  CHECK(eoses.on_req("late-1", 1.6).empty()); // once only
}
