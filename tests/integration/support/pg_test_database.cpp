// SPDX-License-Identifier: MIT
#include "support/pg_test_database.hpp"

#include <catch2/catch.hpp>
#include <array>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <exception>
#include <memory>

#include <libpq-fe.h>

#include "protocol/hex.hpp"
#include "protocol/signature.hpp"
#include "storage/event_rows.hpp"
#include "storage/migrations.hpp"

namespace comb::test {
namespace {

std::string quote_conninfo_value(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "'";
}

std::string random_name() {
  std::array<std::uint8_t, 8> bytes{};
  protocol::fill_random(bytes);
  return "comb_test_" + protocol::to_hex(bytes);
}

/// CREATE/DROP DATABASE take an identifier, which cannot be a parameter; the name is ours
/// (random hex) and quoted anyway.
void run_admin(const std::string& sql_prefix, const std::string& name, const char* suffix) {
  storage::pg_connection admin(admin_conninfo());
  REQUIRE_FALSE(admin.ensure_connected());
  auto reply = admin.exec(sql_prefix + '"' + name + '"' + suffix);
  INFO(reply.error());
  REQUIRE(reply.ok());
}

} // namespace

std::string tag_copies_disagreeing(const std::string& conninfo) {
  storage::pg_connection c(conninfo);
  auto migrated = c.exec("SELECT 1 FROM information_schema.columns WHERE table_name = 'event_tags'"
                         " AND column_name = 'version'");
  if (!migrated.ok() || migrated.rows() == 0)
    return migrated.ok() ? "0" : migrated.error();
  auto reply = c.exec(
    "SELECT count(*) FROM event_tags t LEFT JOIN events e ON e.community_id = t.community_id"
    " AND e.id = t.event_id WHERE e.id IS NULL OR (t.pubkey, t.expires_at, t.size, t.version)"
    " IS DISTINCT FROM (e.pubkey, e.expires_at, octet_length(e.raw), e.xmin::text::bigint)");
  return reply.ok() && reply.rows() == 1 ? std::string(reply.text(0, 0)) : reply.error();
}

std::string admin_conninfo() {
  const char* url = std::getenv("COMB_TEST_DATABASE_URL");
  if (!url || !*url)
    FAIL("COMB_TEST_DATABASE_URL is not set: start the test servers with "
         "`bash tools/services.sh start DIR && source DIR/env`");
  return url;
}

std::string with_database(const std::string& conninfo, const std::string& dbname) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(
    PQconninfoParse(conninfo.c_str(), &error), &PQconninfoFree);
  if (error)
    PQfreemem(error);
  REQUIRE(options);
  std::string out;
  for (auto* option = options.get(); option->keyword; ++option) {
    std::string keyword = option->keyword;
    if (keyword == "dbname" || !option->val)
      continue;
    out += keyword + '=' + quote_conninfo_value(option->val) + ' ';
  }
  return out + "dbname=" + quote_conninfo_value(dbname);
}

fresh_database::fresh_database()
  : name_(random_name()), conninfo_(with_database(admin_conninfo(), name_)) {
  run_admin("CREATE DATABASE ", name_, "");
}

fresh_database::~fresh_database() {
  // Every test's store, whatever wrote it, keeps its tag rows' copies of their events exact.
  if (std::uncaught_exceptions() == 0) {
    const std::string disagreeing = tag_copies_disagreeing(conninfo_);
    INFO("tag rows whose copies of their event disagree with it (migration 49)");
    CHECK(disagreeing == "0");
  }
  try {
    storage::pg_connection admin(admin_conninfo());
    (void)admin.exec("DROP DATABASE IF EXISTS \"" + name_ + "\" WITH (FORCE)");
  } catch (...) {
    // A destructor must not throw; a leftover database goes with the test cluster.
  }
}

store_fixture::store_fixture()
  : connection(database.conninfo()), events(connection), communities(connection) {
  auto error = storage::apply_migrations(connection);
  INFO(error.value_or(""));
  REQUIRE_FALSE(error);
  community = add_community("a.example");
}

std::int64_t store_fixture::add_community(const std::string& host) {
  auto row = communities.ensure(host, {}, false);
  INFO(communities.last_error());
  REQUIRE(row);
  return row->id;
}

std::string scalar(storage::pg_connection& connection,
                   const std::string& sql,
                   const storage::pg_params& params) {
  auto reply = connection.exec(sql, params);
  INFO(sql << ": " << reply.error());
  REQUIRE(reply.ok());
  return reply.rows() > 0 ? std::string(reply.text(0, 0)) : std::string();
}

bool blocked_on_lock(storage::pg_connection& observer, int pid) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    auto waiting = scalar(observer, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int"
                                    " AND wait_event_type = 'Lock'",
                          {std::to_string(pid)});
    if (waiting == "1")
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool waits_for_event_batch(const std::string& conninfo, storage::pg_connection& connection,
                           std::int64_t community, const std::function<void()>& change) {
  storage::pg_connection batch(conninfo);
  (void)scalar(batch, "BEGIN");
  (void)scalar(batch, "SELECT pg_advisory_xact_lock_shared($1::bigint)::text",
               {std::to_string(storage::community_lock_key(community))});
  REQUIRE_FALSE(connection.ensure_connected());
  const int changer = connection.backend_pid();
  std::thread changing(change);
  storage::pg_connection observer(conninfo);
  const bool waited = blocked_on_lock(observer, changer);
  (void)scalar(batch, "COMMIT");
  changing.join();
  return waited;
}

} // namespace comb::test
