// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "storage/community_store.hpp"
#include "storage/event_store.hpp"
#include "storage/pg_connection.hpp"

namespace comb::test {

/// COMB_TEST_DATABASE_URL; fails the running test (not skips it) when it is unset.
[[nodiscard]] std::string admin_conninfo();

/// `conninfo` with its database replaced by `dbname`.
[[nodiscard]] std::string with_database(const std::string& conninfo, const std::string& dbname);

/// A database of its own for one test: created with a random name, dropped at the end (with
/// any connections still open to it).
class fresh_database {
public:
  fresh_database();
  ~fresh_database();
  fresh_database(const fresh_database&) = delete;
  fresh_database& operator=(const fresh_database&) = delete;

  [[nodiscard]] const std::string& conninfo() const noexcept { return conninfo_; }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }

private:
  std::string name_;
  std::string conninfo_;
};

/// A migrated fresh database, a connection, both stores and one community ("a.example").
struct store_fixture {
  store_fixture();

  /// Another community in the same database.
  std::int64_t add_community(const std::string& host);

  fresh_database database;
  storage::pg_connection connection;
  storage::event_store events;
  storage::community_store communities;
  std::int64_t community = 0;
};

/// How many tag rows disagree with their event row on what they copy of it (migration 49: what a
/// read by tag checks and sizes without reading the event row), or name no stored event (a read
/// by tag would count it): "0", also before that migration; an error's text otherwise.
[[nodiscard]] std::string tag_copies_disagreeing(const std::string& conninfo);

/// Runs one statement on a separate connection and returns the first field ("" if none);
/// fails the test on error.
std::string scalar(storage::pg_connection& connection,
                   const std::string& sql,
                   const storage::pg_params& params = {});

/// Waits (bounded, 5 s) until the backend `pid` waits on a lock, as seen through `observer`.
bool blocked_on_lock(storage::pg_connection& observer, int pid);

/// Runs `change`, which works on `connection`, in a thread while another session holds
/// `community`'s event lock shared, as an event batch in flight does from before its snapshot to
/// its commit; lets the lock go once the change waits on it (or after 5 s), then joins. True
/// when the change waited for the batch.
bool waits_for_event_batch(const std::string& conninfo, storage::pg_connection& connection,
                           std::int64_t community, const std::function<void()>& change);

} // namespace comb::test
