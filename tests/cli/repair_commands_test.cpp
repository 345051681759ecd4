// SPDX-License-Identifier: MIT
// comb-admin verify and republish-members: finding and repairing a list behind its members
#include <catch2/catch.hpp>

#include "cli_fixture.hpp"

using namespace comb::test;

TEST_CASE("verify finds a list that differs from its members and republish-members repairs it",
          "[cli]") {
  cli_fixture f;
  auto [owner, owner_npub] = random_pubkey();
  auto [alice, alice_npub] = random_pubkey();
  f.admin_ok({"community", "create", "d.example", "--owner", owner});
  f.admin_ok({"community", "create", "e.example", "--owner", owner});
  f.admin_ok({"member", "add", "d.example", alice});

  auto clean = f.admin({"verify", "--json"});
  CHECK(clean.exit_code == 0);
  auto clean_json = clean.json();
  CHECK(clean_json.at("communities").as_array().size() == 2);
  CHECK(clean_json.at("differing").as_array().empty());
  CHECK(f.admin({"verify", "--host", "d.example"}).exit_code == 0);

  // A manual change behind the list's back.
  f.sql("UPDATE members SET role = 'admin' WHERE pubkey = decode($1, 'hex')", {alice});
  auto differs = f.admin({"verify"});
  CHECK(differs.exit_code == 7);
  CHECK_THAT(differs.err, Catch::Contains("d.example"));
  CHECK_THAT(differs.err, !Catch::Contains("e.example"));
  CHECK_THAT(differs.out, Catch::Contains("DIFFERS\td.example"));
  CHECK_THAT(differs.out, Catch::Contains("ok\te.example"));
  auto differs_json = f.admin({"verify", "--json"}).json();
  CHECK(differs_json.at("exit_code").as_int64() == 7);
  CHECK(differs_json.at("differing").as_array() == boost::json::array{"d.example"});
  CHECK(f.admin({"verify", "--host", "e.example"}).exit_code == 0);
  CHECK(f.admin({"verify", "--host", "d.example"}).exit_code == 7);
  CHECK(f.admin({"verify", "--host", "nowhere.example"}).exit_code == 2);

  auto repaired = f.admin({"republish-members", "d.example", "--json"});
  REQUIRE(repaired.exit_code == 0);
  CHECK(repaired.json().at("command").as_string() == "republish-members");
  CHECK(f.listed("d.example") == std::set<std::pair<std::string, std::string>>{
                                   {owner, "owner"}, {alice, "admin"}});
  CHECK(f.admin({"verify"}).exit_code == 0);
  CHECK(f.admin({"republish-members", "nowhere.example"}).exit_code == 2);
}

TEST_CASE("verify reports a deleted list", "[cli]") {
  cli_fixture f;
  f.admin_ok({"community", "create", "d.example", "--owner", random_pubkey().second});
  f.sql("DELETE FROM events WHERE kind = 13534");
  auto differs = f.admin({"verify"});
  CHECK(differs.exit_code == 7);
  CHECK_THAT(differs.out, Catch::Contains("no live list"));
  f.admin_ok({"republish-members", "d.example"});
  CHECK(f.admin({"verify"}).exit_code == 0);
}
