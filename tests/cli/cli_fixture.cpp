// SPDX-License-Identifier: MIT
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/community_key.hpp"
#include "protocol/event_json.hpp"
#include "protocol/nip19.hpp"
#include "storage/member_list.hpp"

namespace comb::test {
namespace {

std::string read_and_remove(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return text.str();
}

std::string temp_file(const char* prefix) {
  std::string path = std::filesystem::temp_directory_path() / (std::string(prefix) + "XXXXXX");
  int fd = ::mkstemp(path.data());
  REQUIRE(fd >= 0);
  ::close(fd);
  return path;
}

} // namespace

boost::json::object admin_run::json() const {
  INFO("stdout: " << out << "\nstderr: " << err);
  boost::system::error_code ec;
  auto value = boost::json::parse(out, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(value.is_object());
  return value.as_object();
}

admin_run run_admin(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env) {
  // Output goes to files, not pipes: nothing to drain while the child runs, so no deadlock.
  const auto out_path = temp_file("comb-cli-out-");
  const auto err_path = temp_file("comb-cli-err-");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_TRUNC, 0);
  std::vector<std::string> argv_text{COMB_ADMIN_BIN};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<std::string> env_text{"PATH=/usr/bin:/bin"};
  for (const auto& [name, value] : env)
    env_text.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (auto& arg : argv_text)
    argv.push_back(arg.data());
  for (auto& var : env_text)
    envp.push_back(var.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, COMB_ADMIN_BIN, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  admin_run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_and_remove(out_path);
  run.err = read_and_remove(err_path);
  return run;
}

cli_fixture::cli_fixture() : relay_key(protocol::key_pair::generate()) {
  folder = std::filesystem::temp_directory_path() / ("comb-cli-" + database.name());
  std::filesystem::create_directories(folder);
  key_file = folder + "/relay.key";
  std::ofstream(key_file) << protocol::to_hex(relay_key.secret()) << '\n';
  std::filesystem::permissions(key_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

cli_fixture::~cli_fixture() {
  std::error_code ec;
  std::filesystem::remove_all(folder, ec);
}

admin_run cli_fixture::admin(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& extra_env) const {
  std::map<std::string, std::string> env{{"COMB_DATABASE_URL", database.conninfo()},
                                         {"COMB_RELAY_KEY_FILE", key_file}};
  for (const auto& [name, value] : extra_env)
    env[name] = value;
  return run_admin(args, env);
}

admin_run cli_fixture::admin_ok(const std::vector<std::string>& args) const {
  auto run = admin(args);
  INFO("comb-admin " << args.front() << " ...\nstdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  return run;
}

std::string cli_fixture::sql(const std::string& statement, const storage::pg_params& params) const {
  storage::pg_connection connection(database.conninfo());
  return scalar(connection, statement, params);
}

std::set<std::pair<std::string, std::string>> cli_fixture::stored(const std::string& host) const {
  storage::pg_connection connection(database.conninfo());
  auto reply = connection.exec("SELECT encode(m.pubkey, 'hex'), m.role FROM members m"
                               " JOIN communities c ON c.id = m.community_id WHERE c.host = $1",
                               {host});
  REQUIRE(reply.ok());
  std::set<std::pair<std::string, std::string>> out;
  for (int row = 0; row < reply.rows(); ++row)
    out.insert({std::string(reply.text(row, 0)), std::string(reply.text(row, 1))});
  return out;
}

protocol::key_pair cli_fixture::signer(const std::string& host) const {
  return protocol::derive_community_key(relay_key, host);
}

std::set<std::pair<std::string, std::string>> cli_fixture::listed(const std::string& host) const {
  storage::pg_connection connection(database.conninfo());
  auto reply = connection.exec("SELECT e.raw FROM events e JOIN communities c"
                               " ON c.id = e.community_id WHERE c.host = $1 AND e.kind = 13534",
                               {host});
  REQUIRE(reply.ok());
  REQUIRE(reply.rows() == 1);
  auto ev = protocol::event_from_json(boost::json::parse(reply.text(0, 0)), {});
  REQUIRE(ev);
  CHECK(ev.value().pubkey == signer(host).public_key());
  auto members = storage::members_of_list(ev.value());
  REQUIRE(members);
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& m : *members)
    out.insert({protocol::to_hex(m.pubkey), std::string(storage::role_name(m.role))});
  return out;
}

std::pair<std::string, std::string> random_pubkey() {
  auto key = protocol::key_pair::generate();
  return {protocol::to_hex(key.public_key()), protocol::encode_nip19("npub", key.public_key())};
}

} // namespace comb::test
