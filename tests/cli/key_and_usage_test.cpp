// SPDX-License-Identifier: MIT
// comb-admin key generate, help, usage errors, database and key-file failures
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>

#include "cli_fixture.hpp"
#include "protocol/nip19.hpp"

using namespace comb::test;

namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST_CASE("key generate writes a 0600 secret and refuses to overwrite it", "[cli]") {
  cli_fixture f;
  const auto path = f.folder + "/keys/new.key";
  auto generated = f.admin({"key", "generate", "--out", path, "--json"});
  REQUIRE(generated.exit_code == 0);
  auto json = generated.json();
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  auto secret_text = contents(path);
  std::smatch match;
  REQUIRE(std::regex_match(secret_text, match, std::regex("([0-9a-f]{64})\n")));
  auto secret = comb::protocol::array_from_hex<32>(match[1].str());
  REQUIRE(secret);
  auto pair = comb::protocol::key_pair::from_secret(*secret);
  REQUIRE(pair);
  CHECK(json.at("pubkey").as_string() == comb::protocol::to_hex(pair->public_key()));
  CHECK(json.at("npub").as_string() == comb::protocol::encode_nip19("npub", pair->public_key()));
  CHECK(json.at("file").as_string() == path);
  CHECK(generated.out.find(match[1].str()) == std::string::npos); // the secret is never printed

  auto human = f.admin({"key", "generate", "--out", f.folder + "/other.key"});
  REQUIRE(human.exit_code == 0);
  CHECK(std::regex_match(human.out, std::regex("[0-9a-f]{64}\nnpub1[0-9a-z]{58}\n")));

  auto again = f.admin({"key", "generate", "--out", path});
  CHECK(again.exit_code == 5);
  CHECK_THAT(again.err, Catch::Contains("refusing to overwrite"));
  CHECK(contents(path) == secret_text);
  // Without --out it writes the configured relay key file, which exists here.
  CHECK(f.admin({"key", "generate"}).exit_code == 5);
  CHECK(contents(f.key_file) == comb::protocol::to_hex(f.relay_key.secret()) + "\n");
}

TEST_CASE("a relay key other than the deployment's is refused before any change, naming both keys", "[cli]") {
  cli_fixture f;
  auto owner = random_pubkey().first;
  REQUIRE(f.admin({"community", "create", "c.example", "--owner", owner}).exit_code == 0);
  // The dev relay's ./var/relay.key, picked up by a comb-admin run from the source tree.
  const auto stray = f.folder + "/stray.key";
  auto other = comb::protocol::key_pair::generate();
  std::ofstream(stray) << comb::protocol::to_hex(other.secret()) << '\n';
  std::filesystem::permissions(stray, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto member = random_pubkey().first;
  auto refused = f.admin({"member", "add", "c.example", member}, {{"COMB_RELAY_KEY_FILE", stray}});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains(comb::protocol::to_hex(f.relay_key.public_key())));
  CHECK_THAT(refused.err, Catch::Contains(comb::protocol::to_hex(other.public_key())));
  CHECK(f.listed("c.example").size() == 1); // the owner only: nothing was signed with the stray key
  CHECK(f.admin({"member", "add", "c.example", member}).exit_code == 0);
  CHECK(f.listed("c.example").size() == 2);
}

TEST_CASE("help documents the exit codes and usage errors exit 1", "[cli]") {
  auto help = run_admin({"--help"}, {});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("Exit codes"));
  CHECK_THAT(help.out, Catch::Contains("7  verify"));
  CHECK(run_admin({}, {}).exit_code == 1);
  CHECK(run_admin({"member"}, {}).exit_code == 1);
  CHECK(run_admin({"frobnicate"}, {}).exit_code == 1);
  auto json_usage = run_admin({"member", "add", "--json"}, {});
  CHECK(json_usage.exit_code == 1);
  CHECK_FALSE(json_usage.json().at("ok").as_bool());
  auto no_database = run_admin({"community", "list"}, {});
  CHECK(no_database.exit_code == 1);
  CHECK_THAT(no_database.err, Catch::Contains("COMB_DATABASE_URL"));
}

TEST_CASE("an unreachable database exits 6 and a missing relay key exits 1", "[cli]") {
  auto unreachable = run_admin({"community", "list", "--json"},
                               {{"COMB_DATABASE_URL", "postgresql://postgres@127.0.0.1:1/none"}});
  CHECK(unreachable.exit_code == 6);
  CHECK(unreachable.json().at("exit_code").as_int64() == 6);
  CHECK_THAT(unreachable.err, Catch::Contains("database"));

  cli_fixture f;
  auto owner = random_pubkey().first;
  auto no_key = f.admin({"community", "create", "c.example", "--owner", owner},
                        {{"COMB_RELAY_KEY_FILE", f.folder + "/missing.key"}});
  CHECK(no_key.exit_code == 1);
  CHECK_THAT(no_key.err, Catch::Contains("missing.key"));
  CHECK_FALSE(std::filesystem::exists(f.folder + "/missing.key")); // never created by comb-admin
  // A key file others may read is refused, with the fix in the message.
  const auto loose = f.folder + "/loose.key";
  std::ofstream(loose) << comb::protocol::to_hex(f.relay_key.secret()) << '\n';
  std::filesystem::permissions(loose, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write
                                        | std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  auto readable = f.admin({"community", "create", "c.example", "--owner", owner},
                          {{"COMB_RELAY_KEY_FILE", loose}});
  CHECK(readable.exit_code == 1);
  CHECK_THAT(readable.err, Catch::Contains("chmod 600 " + loose));
  // The data folder default: <COMB_DATA_DIR>/relay.key.
  auto via_data_dir = run_admin({"community", "create", "c.example", "--owner", owner},
                                {{"COMB_DATABASE_URL", f.database.conninfo()},
                                 {"COMB_DATA_DIR", f.folder}});
  CHECK(via_data_dir.exit_code == 0);
  // Flags given before the command work as well as after it.
  CHECK(run_admin({"--database-url", f.database.conninfo(), "--json", "community", "list"}, {})
          .exit_code == 0);
}
