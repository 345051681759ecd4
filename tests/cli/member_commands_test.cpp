// SPDX-License-Identifier: MIT
// comb-admin member add|remove|set-role|list, transfer-owner
#include <catch2/catch.hpp>
#include <filesystem>

#include "cli_fixture.hpp"

using namespace comb::test;
using members_set = std::set<std::pair<std::string, std::string>>;

namespace {

/// The 8000/8001 deltas of `host` that name `pubkey_hex`.
std::string deltas(const cli_fixture& f, int kind, const std::string& pubkey_hex) {
  return f.sql("SELECT count(*) FROM events e JOIN event_tags t ON t.community_id = e.community_id"
               " AND t.event_id = e.id WHERE e.kind = $1::int AND t.name = 'p' AND t.value = $2",
               {std::to_string(kind), pubkey_hex});
}

} // namespace

TEST_CASE("member add set-role and remove write the list and refusals write nothing", "[cli]") {
  cli_fixture f;
  auto [owner, owner_npub] = random_pubkey();
  auto [alice, alice_npub] = random_pubkey();
  auto [bob, bob_npub] = random_pubkey();
  f.admin_ok({"community", "create", "c.example", "--owner", owner_npub});

  auto added = f.admin({"member", "add", "c.example", alice_npub, "--json"});
  REQUIRE(added.exit_code == 0);
  auto json = added.json();
  CHECK(json.at("command").as_string() == "member add");
  CHECK(json.at("outcome").as_string() == "changed");
  CHECK(json.at("pubkey").as_string() == alice);
  CHECK(json.at("npub").as_string() == alice_npub);
  CHECK(json.at("role").as_string() == "member");
  CHECK(json.at("member_count").as_int64() == 2);
  CHECK(json.at("list_id").as_string().size() == 64);
  CHECK_FALSE(json.at("pushed_live").as_bool());
  CHECK_THAT(added.err, Catch::Contains("Postgres notification")); // no Redis configured
  CHECK(f.stored("c.example") == members_set{{owner, "owner"}, {alice, "member"}});
  CHECK(f.listed("c.example") == f.stored("c.example"));
  CHECK(deltas(f, 8000, alice) == "1");

  f.admin_ok({"member", "add", "c.example", bob, "--role", "admin"});
  CHECK(f.listed("c.example") == members_set{{owner, "owner"}, {alice, "member"}, {bob, "admin"}});
  auto list_before = f.sql("SELECT encode(id, 'hex') FROM events WHERE kind = 13534");

  SECTION("refusals") {
    auto again = f.admin({"member", "add", "c.example", alice, "--json"});
    CHECK(again.exit_code == 5);
    CHECK_THAT(again.err, Catch::Contains("already a member"));
    CHECK_FALSE(again.json().at("ok").as_bool());
    CHECK(again.json().at("exit_code").as_int64() == 5);
    CHECK(f.admin({"member", "add", "c.example", "npub1qqqqqqqq"}).exit_code == 1);
    CHECK(f.admin({"member", "add", "c.example", "not-hex-" + alice.substr(8)}).exit_code == 1);
    CHECK(f.admin({"member", "add", "c.example", alice, "--role", "owner"}).exit_code == 1);
    auto unknown = f.admin({"member", "add", "nowhere.example", alice});
    CHECK(unknown.exit_code == 2);
    CHECK_THAT(unknown.err, Catch::Contains("unknown host"));

    auto remove_owner = f.admin({"member", "remove", "c.example", owner, "--json"});
    CHECK(remove_owner.exit_code == 3);
    CHECK_THAT(std::string(remove_owner.json().at("error").as_string()), Catch::Contains("owner"));
    CHECK(f.admin({"member", "set-role", "c.example", owner, "member"}).exit_code == 3);
    CHECK(f.admin({"member", "set-role", "c.example", alice, "member"}).exit_code == 5);
    CHECK(f.admin({"member", "set-role", "c.example", alice, "owner"}).exit_code == 1);
    auto mismatch = f.admin({"member", "remove", "c.example", bob, "--if-role", "member"});
    CHECK(mismatch.exit_code == 4);
    CHECK_THAT(mismatch.err, Catch::Contains("role mismatch"));
    auto stranger = random_pubkey().first;
    CHECK(f.admin({"member", "remove", "c.example", stranger}).exit_code == 2);
    CHECK(f.admin({"member", "set-role", "c.example", stranger, "admin"}).exit_code == 2);
    // None of them wrote a list.
    CHECK(f.sql("SELECT encode(id, 'hex') FROM events WHERE kind = 13534") == list_before);
  }
  SECTION("set-role and remove") {
    f.admin_ok({"member", "set-role", "c.example", alice_npub, "admin"});
    CHECK(f.listed("c.example") == members_set{{owner, "owner"}, {alice, "admin"}, {bob, "admin"}});
    f.admin_ok({"member", "remove", "c.example", bob, "--if-role", "admin"});
    f.admin_ok({"member", "remove", "c.example", alice});
    CHECK(f.listed("c.example") == members_set{{owner, "owner"}});
    CHECK(f.stored("c.example") == members_set{{owner, "owner"}});
    CHECK(deltas(f, 8001, alice) == "1");
    CHECK(f.admin({"member", "remove", "c.example", alice}).exit_code == 2);
  }
  SECTION("list in list order") {
    auto listing = f.admin_ok({"member", "list", "c.example", "--json"}).json();
    const auto& rows = listing.at("members").as_array();
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].at("pubkey").as_string() == owner);
    CHECK(rows[0].at("role").as_string() == "owner");
    CHECK(rows[1].at("npub").as_string() == alice_npub);
    CHECK(rows[2].at("role").as_string() == "admin");
    auto human = f.admin_ok({"member", "list", "c.example"});
    CHECK_THAT(human.out, Catch::Contains("owner\t" + owner + "\t" + owner_npub));
    CHECK(f.admin({"member", "list", "nowhere.example"}).exit_code == 2);
  }
}

TEST_CASE("transfer-owner moves ownership and the old owner stays a member", "[cli]") {
  cli_fixture f;
  auto [owner, owner_npub] = random_pubkey();
  auto [alice, alice_npub] = random_pubkey();
  auto [newcomer, newcomer_npub] = random_pubkey();
  f.admin_ok({"community", "create", "c.example", "--owner", owner});
  f.admin_ok({"member", "add", "c.example", alice});

  auto moved = f.admin({"transfer-owner", "c.example", alice_npub, "--json"});
  REQUIRE(moved.exit_code == 0);
  CHECK(moved.json().at("command").as_string() == "transfer-owner");
  CHECK(f.listed("c.example") == members_set{{owner, "member"}, {alice, "owner"}});
  CHECK(f.stored("c.example") == f.listed("c.example"));
  auto again = f.admin({"transfer-owner", "c.example", alice});
  CHECK(again.exit_code == 5);
  CHECK_THAT(again.err, Catch::Contains("already the owner"));
  // The former owner is an ordinary member now, so removing them works.
  f.admin_ok({"member", "remove", "c.example", owner});
  // Ownership may also go to someone who was not a member yet.
  f.admin_ok({"transfer-owner", "c.example", newcomer_npub});
  CHECK(f.listed("c.example") == members_set{{alice, "member"}, {newcomer, "owner"}});
  CHECK(f.admin({"transfer-owner", "nowhere.example", alice}).exit_code == 2);
  CHECK(f.admin({"transfer-owner", "c.example", "npub1zzz"}).exit_code == 1);
}

namespace {

/// libfaketime, which the test command installs (tools/packages.txt): a process it is preloaded
/// into reads a clock shifted by FAKETIME.
std::string faketime_library() {
  namespace fs = std::filesystem;
  for (const auto& dir : fs::directory_iterator("/usr/lib"))
    if (auto candidate = dir.path() / "faketime" / "libfaketime.so.1"; fs::exists(candidate))
      return candidate.string();
  return {};
}

} // namespace

TEST_CASE("comb-admin on a machine whose clock is an hour ahead signs lists at the database's time",
          "[cli]") {
  const auto library = faketime_library();
  REQUIRE_FALSE(library.empty());
  cli_fixture f;
  auto [owner, owner_npub] = random_pubkey();
  auto [alice, alice_npub] = random_pubkey();
  const std::map<std::string, std::string> hour_ahead{{"LD_PRELOAD", library}, {"FAKETIME", "+1h"}};
  REQUIRE(f.admin({"community", "create", "c.example", "--owner", owner_npub}, hour_ahead).exit_code == 0);
  REQUIRE(f.admin({"member", "add", "c.example", alice_npub}, hour_ahead).exit_code == 0);
  CHECK(f.listed("c.example") == members_set{{owner, "owner"}, {alice, "member"}});
  // Lists keep pace with the clock: one an hour ahead would hold every join on every pod for an hour.
  auto ahead = f.sql("SELECT max(created_at) - extract(epoch FROM now())::bigint FROM events"
                     " WHERE kind IN (13534, 8000)");
  CHECK(std::stoll(ahead) <= 5);
  CHECK(std::stoll(ahead) >= -5);
}
