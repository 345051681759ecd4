// SPDX-License-Identifier: MIT
// comb-admin community create|list|add-host|archive|unarchive|set-access|set-info|delete
#include <catch2/catch.hpp>

#include "cli_fixture.hpp"

using namespace comb::test;

namespace {

const boost::json::object* community_in(const boost::json::object& listing,
                                        const std::string& host) {
  for (const auto& entry : listing.at("communities").as_array())
    if (entry.as_object().at("host").as_string() == host)
      return &entry.as_object();
  return nullptr;
}

} // namespace

TEST_CASE("community create writes the community with its owner and the owner's list", "[cli]") {
  cli_fixture f;
  auto [owner_hex, owner_npub] = random_pubkey();
  auto created = f.admin_ok({"community", "create", "Hive.Example:443", "--owner", owner_npub,
                             "--json"});
  auto json = created.json();
  CHECK(json.at("ok").as_bool());
  CHECK(json.at("command").as_string() == "community create");
  CHECK(json.at("host").as_string() == "hive.example"); // normalized
  CHECK(json.at("owner").as_string() == owner_hex);
  CHECK(json.at("access").as_string() == "open");
  CHECK(json.at("community_id").as_int64() > 0);
  CHECK(f.stored("hive.example")
        == std::set<std::pair<std::string, std::string>>{{owner_hex, "owner"}});
  CHECK(f.listed("hive.example") == f.stored("hive.example"));
  CHECK(f.sql("SELECT access FROM communities WHERE host = 'hive.example'") == "open");

  SECTION("a host taken is a conflict also when written differently") {
    auto again = f.admin({"community", "create", "HIVE.example", "--owner", owner_hex});
    CHECK(again.exit_code == 5);
    CHECK_THAT(again.err, Catch::Contains("hive.example already serves"));
  }
  SECTION("closed") {
    f.admin_ok({"community", "create", "closed.example", "--owner", owner_hex, "--closed"});
    CHECK(f.sql("SELECT access FROM communities WHERE host = 'closed.example'") == "closed");
  }
  SECTION("bad input is a usage error and writes nothing") {
    auto bad_host = f.admin({"community", "create", "bad host", "--owner", owner_hex});
    CHECK(bad_host.exit_code == 1);
    CHECK_THAT(bad_host.err, Catch::Contains("not a valid host"));
    auto bad_owner = f.admin({"community", "create", "new.example", "--owner", "npub1notakey"});
    CHECK(bad_owner.exit_code == 1);
    CHECK_THAT(bad_owner.err, Catch::Contains("not a public key"));
    auto short_hex =
      f.admin({"community", "create", "new.example", "--owner", owner_hex.substr(2)});
    CHECK(short_hex.exit_code == 1);
    auto no_owner = f.admin({"community", "create", "new.example"});
    CHECK(no_owner.exit_code == 1);
    CHECK(f.sql("SELECT count(*) FROM communities") == "1");
  }
}

TEST_CASE("community list add-host archive unarchive and set-access", "[cli]") {
  cli_fixture f;
  auto [owner_hex, owner_npub] = random_pubkey();
  f.admin_ok({"community", "create", "a.example", "--owner", owner_hex});
  f.admin_ok({"community", "create", "b.example", "--owner", owner_hex});

  auto alias = f.admin_ok({"community", "add-host", "a.example", "Alias.Example", "--json"});
  CHECK(alias.json().at("alias").as_string() == "alias.example");
  // The alias now finds the community.
  auto via_alias = f.admin_ok({"member", "list", "alias.example", "--json"});
  CHECK(via_alias.json().at("host").as_string() == "a.example");
  auto taken = f.admin({"community", "add-host", "b.example", "alias.example"});
  CHECK(taken.exit_code == 5);
  CHECK_THAT(taken.err, Catch::Contains("alias.example already serves a.example"));
  auto primary_taken = f.admin({"community", "add-host", "a.example", "b.example"});
  CHECK(primary_taken.exit_code == 5);
  CHECK(f.admin({"community", "add-host", "a.example", "bad host"}).exit_code == 1);

  auto listing = f.admin_ok({"community", "list", "--json"}).json();
  REQUIRE(listing.at("communities").as_array().size() == 2);
  const auto* a = community_in(listing, "a.example");
  REQUIRE(a);
  CHECK(a->at("member_count").as_int64() == 1);
  CHECK(a->at("access").as_string() == "open");
  CHECK_FALSE(a->at("archived").as_bool());
  CHECK(a->at("aliases").as_array() == boost::json::array{"alias.example"});
  auto human = f.admin_ok({"community", "list"});
  CHECK_THAT(human.out, Catch::Contains("a.example\topen\tno\t1\talias.example"));

  auto archived = f.admin({"community", "archive", "a.example"});
  CHECK(archived.exit_code == 0);
  CHECK(f.sql("SELECT archived_at IS NOT NULL FROM communities WHERE host = 'a.example'") == "t");
  CHECK(f.admin({"community", "archive", "a.example"}).exit_code == 5);
  CHECK(community_in(f.admin_ok({"community", "list", "--json"}).json(), "a.example")
          ->at("archived").as_bool());
  // Archiving keeps everything: the members are still there.
  CHECK(f.stored("a.example").size() == 1);
  CHECK(f.admin({"community", "unarchive", "a.example"}).exit_code == 0);
  CHECK(f.sql("SELECT archived_at IS NULL FROM communities WHERE host = 'a.example'") == "t");
  auto again = f.admin({"community", "unarchive", "a.example"});
  CHECK(again.exit_code == 5);
  CHECK_THAT(again.err, Catch::Contains("already not archived"));

  CHECK(f.admin({"community", "set-access", "a.example", "closed"}).exit_code == 0);
  CHECK(f.sql("SELECT access FROM communities WHERE host = 'a.example'") == "closed");
  CHECK(f.admin({"community", "set-access", "a.example", "closed"}).exit_code == 5);
  CHECK(f.admin({"community", "set-access", "a.example", "ajar"}).exit_code == 1);
  CHECK(f.admin({"community", "set-access", "a.example", "open"}).exit_code == 0);
  CHECK(f.sql("SELECT access FROM communities WHERE host = 'a.example'") == "open");

  for (const char* command : {"archive", "unarchive", "delete"}) {
    auto unknown = f.admin({"community", command, "nowhere.example"});
    CHECK(unknown.exit_code == 2);
    CHECK_THAT(unknown.err, Catch::Contains("unknown host"));
  }
}

TEST_CASE("community delete removes the community with its members and writes no list", "[cli]") {
  cli_fixture f;
  auto [owner_hex, owner_npub] = random_pubkey();
  auto [member_hex, member_npub] = random_pubkey();
  f.admin_ok({"community", "create", "a.example", "--owner", owner_hex});
  f.admin_ok({"community", "create", "b.example", "--owner", owner_hex});
  f.admin_ok({"community", "add-host", "b.example", "b-alias.example"});
  f.admin_ok({"member", "add", "b.example", member_npub});
  f.admin_ok({"invite", "create", "b.example"});
  auto events_before = f.sql("SELECT count(*) FROM events");

  auto deleted = f.admin({"community", "delete", "b-alias.example", "--json"});
  CHECK(deleted.exit_code == 0);
  CHECK(deleted.json().at("host").as_string() == "b.example");
  CHECK(f.sql("SELECT count(*) FROM communities WHERE host = 'b.example'") == "0");
  CHECK(f.sql("SELECT count(*) FROM community_hosts WHERE host = 'b-alias.example'") == "0");
  CHECK(f.sql("SELECT count(*) FROM members") == "1");  // a.example's owner only
  CHECK(f.sql("SELECT count(*) FROM invites") == "0");
  // b's list and deltas went with it, and nothing new was written for a.
  CHECK(std::stoi(f.sql("SELECT count(*) FROM events")) < std::stoi(events_before));
  CHECK(f.sql("SELECT count(*) FROM events WHERE kind = 13534") == "1");
  CHECK(f.admin({"community", "delete", "b.example"}).exit_code == 2);
  CHECK(f.listed("a.example") == f.stored("a.example"));
}

TEST_CASE("community set-info sets the NIP-11 name, description and icon", "[cli]") {
  cli_fixture f;
  auto [owner_hex, owner_npub] = random_pubkey();
  f.admin_ok({"community", "create", "a.example", "--owner", owner_hex});
  auto set = f.admin_ok({"community", "set-info", "a.example", "--name", "The Hive", "--icon",
                         "https://img.example/hive.png", "--json"});
  CHECK(set.json().at("name").as_string() == "The Hive");
  CHECK(f.sql("SELECT name || '|' || icon || '|' || coalesce(description, '-') FROM communities"
              " WHERE host = 'a.example'")
        == "The Hive|https://img.example/hive.png|-");
  CHECK(f.admin({"community", "set-info", "a.example", "--name", "The Hive"}).exit_code == 5);
  CHECK(f.admin_ok({"community", "set-info", "a.example", "--description", "bees"}).exit_code == 0);
  CHECK(f.admin_ok({"community", "set-info", "a.example", "--icon", ""}).exit_code == 0);
  CHECK(f.sql("SELECT coalesce(icon, '-') || '|' || description FROM communities"
              " WHERE host = 'a.example'")
        == "-|bees");
  CHECK(f.admin({"community", "set-info", "a.example"}).exit_code == 1);
  CHECK(f.admin({"community", "set-info", "a.example", "--icon", "ftp://x"}).exit_code == 1);
  CHECK(f.admin({"community", "set-info", "nowhere.example", "--name", "x"}).exit_code == 2);
}
