// SPDX-License-Identifier: MIT
// comb-admin invite create|list|revoke
#include <catch2/catch.hpp>
#include <regex>

#include "cli_fixture.hpp"
#include "storage/membership_rules.hpp"

using namespace comb::test;

TEST_CASE("invite create prints the code once and stores only its hash", "[cli]") {
  cli_fixture f;
  f.admin_ok({"community", "create", "c.example", "--owner", random_pubkey().first});
  auto before = std::stoll(f.sql("SELECT floor(extract(epoch FROM now()))::bigint"));

  auto created = f.admin_ok({"invite", "create", "c.example", "--uses", "2", "--ttl", "3600"});
  std::smatch match;
  REQUIRE(std::regex_match(created.out, match, std::regex("([0-9a-f]{32})\n")));
  const std::string code = match[1];
  const auto hash = comb::storage::invite_code_hash(code);
  CHECK(f.sql("SELECT count(*) FROM invites WHERE code_hash = $1", {hash}) == "1");
  CHECK(f.sql("SELECT count(*) FROM invites WHERE code_hash = $1", {code}) == "0");
  CHECK(f.sql("SELECT max_uses FROM invites WHERE code_hash = $1", {hash}) == "2");
  auto expires = std::stoll(f.sql("SELECT expires_at FROM invites WHERE code_hash = $1", {hash}));
  CHECK(expires >= before + 3600);
  CHECK(expires <= before + 3600 + 60);

  auto json = f.admin_ok({"invite", "create", "c.example", "--json"}).json();
  CHECK(json.at("code").as_string().size() == 32);
  CHECK(json.at("max_uses").as_int64() == 1); // the relay's default
  CHECK(comb::storage::invite_code_hash(json.at("code").as_string().c_str())
          .starts_with(json.at("hash_prefix").as_string().c_str()));

  CHECK(f.admin({"invite", "create", "c.example", "--uses", "-1"}).exit_code == 1);
  CHECK(f.admin({"invite", "create", "c.example", "--ttl", "0"}).exit_code == 1);
  CHECK(f.admin({"invite", "create", "nowhere.example"}).exit_code == 2);
  CHECK(f.sql("SELECT count(*) FROM invites") == "2");

  SECTION("list never shows a code") {
    auto human = f.admin_ok({"invite", "list", "c.example"});
    CHECK_THAT(human.out, Catch::Contains(hash.substr(0, 12) + "\t0/2\t"));
    CHECK_THAT(human.out, Catch::Contains("active"));
    CHECK(human.out.find(code) == std::string::npos);
    auto listing = f.admin_ok({"invite", "list", "c.example", "--json"});
    CHECK(listing.out.find(code) == std::string::npos);
    auto json_listing = listing.json();
    const auto& invites = json_listing.at("invites").as_array();
    REQUIRE(invites.size() == 2);
    for (const auto& invite : invites) {
      CHECK_FALSE(invite.as_object().contains("code"));
      CHECK(invite.at("hash_prefix").as_string().size() == 12);
      CHECK_FALSE(invite.at("revoked").as_bool());
      CHECK_FALSE(invite.at("expired").as_bool());
      CHECK(invite.at("use_count").as_int64() == 0);
      CHECK_FALSE(invite.at("chosen").as_bool());
    }
    CHECK_THAT(human.out, Catch::Contains("active\tminted"));
    // A code an admin chose (NIP-86 createclaim) is kept sealed beside its hash: marked, not shown.
    f.sql("UPDATE invites SET claim = 'sealed' WHERE code_hash = $1", {hash});
    CHECK_THAT(f.admin_ok({"invite", "list", "c.example"}).out,
               Catch::Contains(hash.substr(0, 12) + "\t0/2\t") && Catch::Contains("active\tchosen"));
    auto marked = f.admin_ok({"invite", "list", "c.example", "--json"}).json();
    int chosen = 0;
    for (const auto& invite : marked.at("invites").as_array())
      chosen += invite.at("chosen").as_bool() ? 1 : 0;
    CHECK(chosen == 1);
    CHECK(f.admin({"invite", "list", "nowhere.example"}).exit_code == 2);
  }
  SECTION("revoke by hash prefix") {
    auto revoked = f.admin({"invite", "revoke", "c.example", hash.substr(0, 10)});
    CHECK(revoked.exit_code == 0);
    CHECK(f.sql("SELECT revoked FROM invites WHERE code_hash = $1", {hash}) == "t");
    CHECK(f.sql("SELECT count(*) FROM invites WHERE revoked") == "1");
    CHECK(f.admin({"invite", "revoke", "c.example", hash.substr(0, 10)}).exit_code == 5);
    CHECK_THAT(f.admin_ok({"invite", "list", "c.example"}).out, Catch::Contains("revoked"));
    auto listing = f.admin_ok({"invite", "list", "c.example", "--json"}).json();
    int revoked_count = 0;
    for (const auto& invite : listing.at("invites").as_array())
      revoked_count += invite.at("revoked").as_bool();
    CHECK(revoked_count == 1);
  }
  SECTION("revoke refusals") {
    auto other = hash[0] == 'f' ? std::string("e") : std::string("f");
    auto unused = other + hash.substr(1, 11);
    // Neither stored hash starts with `unused` unless both codes collide in 48 bits.
    CHECK(f.admin({"invite", "revoke", "c.example", unused}).exit_code == 2);
    CHECK(f.admin({"invite", "revoke", "c.example", "XYZ"}).exit_code == 1);
    CHECK(f.admin({"invite", "revoke", "c.example", "%"}).exit_code == 1);
    f.sql("INSERT INTO invites (community_id, code_hash, expires_at) SELECT id, h, 0"
          " FROM communities, unnest(ARRAY['abcd01', 'abcd02']) AS h");
    auto ambiguous = f.admin({"invite", "revoke", "c.example", "abcd"});
    CHECK(ambiguous.exit_code == 1);
    CHECK_THAT(ambiguous.err, Catch::Contains("several"));
    CHECK(f.sql("SELECT count(*) FROM invites WHERE revoked") == "0");
    CHECK(f.admin({"invite", "revoke", "c.example", "abcd01"}).exit_code == 0);
    CHECK_THAT(f.admin_ok({"invite", "list", "c.example"}).out, Catch::Contains("expired"));
  }
}
