// SPDX-License-Identifier: MIT
// Postgres as the membership authority (DESIGN.md "Who enforces it: the database"): state
// versions and notifications raised by every write path, the LISTEN connection that recovers by
// itself, the lock mode membership writers take, and the all-or-nothing community creation.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <atomic>
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include "actors/community/access_watcher.hpp"
#include "protocol/hex.hpp"
#include "storage/access_change.hpp"
#include "storage/access_state.hpp"
#include "storage/event_rows.hpp"
#include "storage/member_list.hpp"
#include "storage/pg_listener.hpp"
#include "storage/store_plan.hpp"
#include "support/access_probes.hpp"
#include "support/actor_world.hpp"
#include "support/membership_fixture.hpp"
#include "support/test_events.hpp"

using namespace comb;
using namespace comb::test;
using storage::membership_change;

namespace {

/// A pg_listener on its own io thread, collecting what it reports.
struct listening {
  explicit listening(const std::string& conninfo)
    : listener(std::make_shared<storage::pg_listener>(
        io, conninfo, std::string(storage::access_channel),
        storage::pg_listener_events{[this] { ++connects; },
                                    [this](std::string payload) {
                                      std::lock_guard lock(mutex);
                                      payloads.push_back(std::move(payload));
                                    }})) {
    listener->start();
    thread = std::thread([this] { io.run(); });
  }

  ~listening() {
    listener->stop();
    work.reset();
    io.stop();
    thread.join();
  }

  /// Waits (at most 5 s) until `probe` holds.
  template <class Probe>
  bool eventually(Probe probe) {
    for (int i = 0; i < 500; ++i) {
      if (probe())
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::vector<storage::access_notice> notices() {
    std::lock_guard lock(mutex);
    std::vector<storage::access_notice> out;
    for (const auto& payload : payloads)
      if (auto notice = storage::parse_access_notice(payload))
        out.push_back(*notice);
    return out;
  }

  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::atomic<int> connects{0};
  std::mutex mutex;
  std::vector<std::string> payloads;
  std::shared_ptr<storage::pg_listener> listener;
  std::thread thread;
};

} // namespace

TEST_CASE("an access notification names the community, the version and whether it wrote events",
          "[integration][authority]") {
  auto plain = storage::parse_access_notice("12 7");
  REQUIRE(plain);
  CHECK(plain->community_id == 12);
  CHECK(plain->version == 7);
  CHECK_FALSE(plain->wrote_events);
  auto wrote = storage::parse_access_notice("12 8 +");
  REQUIRE(wrote);
  CHECK(wrote->version == 8);
  CHECK(wrote->wrote_events);

  const std::string id(64, 'a'); // ids travel in noted_events, never in the payload
  for (const std::string& bad : std::vector<std::string>{
         "", "12", "x 1", "1 2 zz", "1  2", "1 2 +x", "1 2 + +", "1 2 " + id, " 1 2", "1 2 3"})
    CHECK_FALSE(storage::parse_access_notice(bad));
}

TEST_CASE_METHOD(membership_fixture, "every access change bumps the version and notifies on commit",
                 "[integration][authority]") {
  listening l(database.conninfo());
  REQUIRE(l.eventually([&] { return l.connects.load() == 1; }));

  auto before = version_of(connection, community);
  auto added = apply(command(membership_change::add_member, key_of(2)));
  REQUIRE(added.committed);
  CHECK(added.state_version > before);
  CHECK(version_of(connection, community) == added.state_version);
  REQUIRE(l.eventually([&] { return l.notices().size() == 1; }));
  auto notice = l.notices().front();
  CHECK(notice.community_id == community);
  CHECK(notice.version == added.state_version);
  CHECK(notice.wrote_events);
  auto loaded = storage::load_noted_events(connection, community, {before, 0}, notice.version);
  REQUIRE(loaded);
  REQUIRE(loaded->size() == 2); // the list, then the 8000, as written
  CHECK((*loaded)[0].raw == added.list_json);
  CHECK((*loaded)[1].raw == added.results[0].delta_json);

  // Nothing changed: no version, no notification.
  CHECK(apply(command(membership_change::add_member, key_of(2))).committed);
  CHECK(version_of(connection, community) == added.state_version);

  REQUIRE(communities.set_access(community, true, relay_key, now_seconds()).result
          == storage::lifecycle_result::changed);
  CHECK(communities.set_access(community, true, relay_key, now_seconds()).result
        == storage::lifecycle_result::unchanged);
  REQUIRE(communities.set_archived(community, true) == storage::lifecycle_result::changed);
  REQUIRE(communities.add_host(community, "alias.example") == storage::lifecycle_result::changed);
  REQUIRE(l.eventually([&] { return l.notices().size() == 4; }));
  auto notices = l.notices();
  for (std::size_t i = 1; i < notices.size(); ++i) {
    CHECK(notices[i].community_id == community);
    CHECK(notices[i].version > notices[i - 1].version);
    CHECK_FALSE(notices[i].wrote_events);
  }
  auto state = storage::load_access(connection, community);
  REQUIRE(state);
  CHECK(state->exists);
  CHECK(state->closed);
  CHECK(state->archived);
  CHECK(state->version == notices.back().version);
  CHECK(state->members.size() == 1);

  // Deletion still names the community (the note comes before the row goes).
  REQUIRE(communities.remove(community) == storage::lifecycle_result::changed);
  REQUIRE(l.eventually([&] { return l.notices().size() == 5; }));
  CHECK(l.notices().back().community_id == community);
  auto gone = storage::load_access(connection, community);
  REQUIRE(gone);
  CHECK_FALSE(gone->exists);
  auto versions = storage::load_versions(connection, {community});
  REQUIRE(versions);
  CHECK(versions->empty());
}

TEST_CASE_METHOD(membership_fixture, "a hand edit of anything access checks read bumps the version",
                 "[integration][authority]") {
  // What an operator may run in psql, or a restore may write: each is picked up by every pod's
  // version check (access_watcher), which reloads what load_access reads.
  const std::string id = std::to_string(community);
  const std::string someone = "'\\x" + std::string(64, 'b') + "'::bytea";
  auto edit_bumps = [&](const std::string& sql) {
    auto before = version_of(connection, community);
    (void)scalar(connection, sql, {id});
    INFO(sql);
    return version_of(connection, community) > before;
  };
  CHECK(edit_bumps("UPDATE communities SET access = 'closed' WHERE id = $1::bigint"));
  CHECK(edit_bumps("UPDATE communities SET archived_at = now() WHERE id = $1::bigint"));
  CHECK(edit_bumps("UPDATE communities SET archived_at = NULL, access = 'open' WHERE id = $1::bigint"));
  CHECK(edit_bumps("UPDATE communities SET members_may_invite = true WHERE id = $1::bigint"));
  CHECK(edit_bumps("INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, " + someone + ")"));
  CHECK(edit_bumps("DELETE FROM banned_pubkeys WHERE community_id = $1::bigint"));
  CHECK(edit_bumps("INSERT INTO banned_events (community_id, event_id) VALUES ($1::bigint, " + someone + ")"));
  CHECK(edit_bumps("UPDATE banned_events SET reason = 'spam' WHERE community_id = $1::bigint"));
  CHECK(edit_bumps("INSERT INTO rooms (community_id, room_id) VALUES ($1::bigint, 'lounge')"));
  CHECK(edit_bumps("UPDATE rooms SET private = true WHERE community_id = $1::bigint"));
  CHECK(edit_bumps("INSERT INTO room_members (community_id, room_id, pubkey)"
                   " VALUES ($1::bigint, 'lounge', " + someone + ")"));
  CHECK(edit_bumps("DELETE FROM room_members WHERE community_id = $1::bigint"));
  CHECK(edit_bumps("DELETE FROM rooms WHERE community_id = $1::bigint"));
  // A host removed or renamed: every pod must forget its cached answer for it (adding one
  // changes nothing the community's pods hold).
  CHECK_FALSE(edit_bumps("INSERT INTO community_hosts (host, community_id) VALUES ('alias.example', $1::bigint)"));
  CHECK(edit_bumps("UPDATE community_hosts SET host = 'other.example' WHERE host = 'alias.example'"
                   " AND community_id = $1::bigint"));
  CHECK(edit_bumps("DELETE FROM community_hosts WHERE host = 'other.example' AND community_id = $1::bigint"));
  // TRUNCATE fires no row trigger: its own bumps every community.
  CHECK(edit_bumps("INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, " + someone + ")"));
  for (const char* table : {"banned_pubkeys", "banned_events", "room_members", "members"}) {
    auto truncated_from = version_of(connection, community);
    (void)scalar(connection, std::string("TRUNCATE ") + table);
    INFO(table);
    CHECK(version_of(connection, community) > truncated_from);
  }

  // What access checks do not read, and statements that change no row, leave it alone.
  CHECK_FALSE(edit_bumps("UPDATE communities SET name = 'Hive' WHERE id = $1::bigint"));
  CHECK_FALSE(edit_bumps("UPDATE communities SET access = 'open' WHERE id = $1::bigint"));
  CHECK_FALSE(edit_bumps("DELETE FROM banned_pubkeys WHERE community_id = $1::bigint"));
  CHECK_FALSE(edit_bumps("DELETE FROM room_members WHERE community_id = $1::bigint"));

  // A transaction of many statements bumps once; the next transaction bumps again.
  auto before = version_of(connection, community);
  (void)scalar(connection, "BEGIN");
  for (char digit : std::string("123"))
    (void)scalar(connection, "INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, '\\x"
                               + std::string(63, 'c') + digit + "'::bytea)", {id});
  (void)scalar(connection, "DELETE FROM banned_pubkeys WHERE community_id = $1::bigint", {id});
  (void)scalar(connection, "COMMIT");
  CHECK(version_of(connection, community) == before + 1);
  CHECK(edit_bumps("INSERT INTO banned_pubkeys (community_id, pubkey) VALUES ($1::bigint, " + someone + ")"));

  // The state a pod reloads at the new version is the edited one.
  (void)scalar(connection, "UPDATE communities SET access = 'closed' WHERE id = $1::bigint", {id});
  auto state = storage::load_access(connection, community);
  REQUIRE(state);
  CHECK(state->closed);
  CHECK(state->members_may_invite);
  CHECK(state->version == version_of(connection, community));
}

TEST_CASE_METHOD(membership_fixture, "an event is stored only if the database's access admits its author",
                 "[integration][authority]") {
  // A pod admits an event with its member cache, which follows the database a little behind; the
  // batch that stores it asks the database again.
  const author member(6), outsider(7);
  REQUIRE(apply(command(membership_change::add_member, member.pubkey())).committed);
  REQUIRE(communities.set_access(community, true, relay_key, now_seconds()).result
          == storage::lifecycle_result::changed);
  int posted = 0;
  auto post = [&](const author& who) {
    return store_one(events, community, who.sign(1, now_seconds(), {}, "post " + std::to_string(++posted)));
  };
  check_outcome(post(member), storage::store_outcome::status::stored, "");
  check_outcome(post(outsider), storage::store_outcome::status::refused, storage::msg_not_member);

  REQUIRE(apply(command(membership_change::remove_member, member.pubkey())).committed);
  check_outcome(post(member), storage::store_outcome::status::refused, storage::msg_not_member);

  // A zap receipt is its Lightning service's, admitted as its sender's: the sender is asked.
  const author service(8), fan(9);
  REQUIRE(apply(command(membership_change::add_member, fan.pubkey())).committed);
  auto receipt = [&](const author& sender) {
    auto w = write_of(community, service.sign(9735, now_seconds(), {}, "zap " + std::to_string(++posted)));
    w.admitted_as = sender.pubkey();
    return events.store_batch({&w, 1}).front();
  };
  check_outcome(receipt(fan), storage::store_outcome::status::stored, "");
  check_outcome(receipt(member), storage::store_outcome::status::refused, storage::msg_not_member);

  // An import restores what the community held, its former members' events included.
  auto restored = write_of(community, outsider.sign(1, now_seconds(), {}, "restored"));
  restored.recheck_access = false;
  check_outcome(events.store_batch({&restored, 1}).front(), storage::store_outcome::status::stored, "");

  REQUIRE(communities.set_access(community, false, relay_key, now_seconds()).result
          == storage::lifecycle_result::changed);
  check_outcome(post(outsider), storage::store_outcome::status::stored, "");
  REQUIRE(communities.set_archived(community, true) == storage::lifecycle_result::changed);
  check_outcome(post(outsider), storage::store_outcome::status::refused, storage::msg_archived);
}

TEST_CASE_METHOD(membership_fixture, "a rolled-back change raises no notification",
                 "[integration][authority]") {
  listening l(database.conninfo());
  REQUIRE(l.eventually([&] { return l.connects.load() == 1; }));
  // The list insert fails inside the transaction: the members change, the version and the
  // notification all roll back with it.
  (void)scalar(connection, "CREATE FUNCTION refuse_lists() RETURNS trigger LANGUAGE plpgsql AS"
                           " $$ BEGIN RAISE EXCEPTION 'no lists today'; END $$");
  (void)scalar(connection, "CREATE TRIGGER refuse_lists BEFORE INSERT ON events FOR EACH ROW"
                           " WHEN (NEW.kind = 13534) EXECUTE FUNCTION refuse_lists()");
  auto before = version_of(connection, community);
  auto failed = apply(command(membership_change::add_member, key_of(3)));
  CHECK_FALSE(failed.committed);
  CHECK(version_of(connection, community) == before);
  CHECK(stored_members(community).empty());

  // create_community_with_owner is all or nothing too: no community without its list.
  auto created = members.create_community_with_owner("new.example", key_of(4), true, now_seconds());
  CHECK(created.result == storage::community_creation::status::failed);
  CHECK(scalar(connection, "SELECT count(*) FROM communities WHERE host = 'new.example'") == "0");
  CHECK(scalar(connection, "SELECT count(*) FROM members") == "0");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(l.notices().empty());
}

namespace {

/// A listener on a database of its own, listening; `c` is another connection to it.
struct listening_alone {
  listening_alone() { REQUIRE(l.eventually([&] { return l.connects.load() == 1; })); }

  fresh_database db;
  storage::pg_connection c{db.conninfo()};
  listening l{db.conninfo()};
};

} // namespace

TEST_CASE_METHOD(listening_alone, "the LISTEN connection comes back by itself after its backend is killed",
                 "[integration][authority]") {
  CHECK(l.listener->problem().empty());
  int pid = l.listener->backend_pid();
  REQUIRE(pid != 0);
  (void)scalar(c, "SELECT pg_terminate_backend($1::int)::text", {std::to_string(pid)});
  REQUIRE(l.eventually([&] { return l.connects.load() == 2; }));
  CHECK(l.listener->backend_pid() != pid);
  CHECK(l.listener->problem().empty());
  (void)scalar(c, "SELECT pg_notify('comb_access', '5 9')::text");
  REQUIRE(l.eventually([&] { return l.notices().size() == 1; }));
  CHECK(l.notices().front().version == 9);
}

TEST_CASE_METHOD(listening_alone, "a LISTEN connection whose server stops answering is dropped and made again",
                 "[integration][authority]") {
  const int frozen = l.listener->backend_pid();
  REQUIRE(frozen != 0);
  // A stopped backend keeps its socket open and its kernel acknowledges what is sent: as a
  // server that hangs, or a link that stopped forwarding, it answers nothing and closes nothing.
  if (::kill(frozen, SIGSTOP) != 0) {
    WARN("cannot stop the backend (" << std::strerror(errno) << "): run as root or as Postgres's user");
    return;
  }
  struct resume {
    int pid;
    ~resume() { (void)::kill(pid, SIGCONT); }
  } resumed{frozen};
  auto within = [&](std::chrono::seconds limit, auto probe) {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      if (probe())
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  // Two heartbeats at most: one sent, the next finds it unanswered.
  const auto limit = 2 * storage::pg_listener::heartbeat_interval + std::chrono::seconds(2);
  REQUIRE(within(limit, [&] { return l.connects.load() == 2; }));
  CHECK(l.listener->backend_pid() != frozen);
  CHECK(l.listener->problem().empty());
  (void)scalar(c, "SELECT pg_notify('comb_access', '5 9')::text");
  REQUIRE(l.eventually([&] { return l.notices().size() == 1; }));
  CHECK(l.notices().front().version == 9);
}

TEST_CASE("a listener that cannot reach Postgres says so and keeps trying",
          "[integration][authority]") {
  listening l("host=127.0.0.1 port=1 connect_timeout=1");
  REQUIRE(l.eventually([&] { return l.listener->problem().starts_with("postgres: ")
                                     && l.listener->problem() != "postgres: not connected yet"; }));
  CHECK(l.connects.load() == 0);
}

TEST_CASE_METHOD(membership_fixture, "a membership write holds the community row without blocking event inserts",
                 "[integration][authority][race]") {
  // Membership writers lock the community row FOR NO KEY UPDATE; an event insert's foreign key
  // takes FOR KEY SHARE, which that does not conflict with. Were it FOR UPDATE, the insert below
  // would wait for the membership transaction (and hit its statement timeout).
  REQUIRE(apply(command(membership_change::add_member, key_of(2))).committed);
  storage::pg_connection holder(database.conninfo());
  storage::address list{community, signer(community).public_key(), storage::member_list_kind, ""};
  auto list_lock = std::to_string(storage::address_lock_key(list));
  REQUIRE(scalar(holder, "SELECT pg_advisory_lock($1::bigint)::text", {list_lock}) == "");

  REQUIRE_FALSE(connection.ensure_connected());
  int writer_pid = connection.backend_pid();
  storage::membership_write joined;
  std::thread join([&] { joined = apply(command(membership_change::add_member, key_of(3))); });
  // The writer now holds the community row and waits for the list lock.
  storage::pg_connection observer(database.conninfo());
  bool waiting = blocked_on_lock(observer, writer_pid);

  storage::pg_connection inserter(database.conninfo());
  (void)scalar(inserter, "SET statement_timeout = '3s'");
  storage::event_store events_elsewhere(inserter);
  auto started = std::chrono::steady_clock::now();
  auto stored = store_one(events_elsewhere, community, author(9).sign(1, now_seconds()));
  auto took = std::chrono::steady_clock::now() - started;

  (void)scalar(holder, "SELECT pg_advisory_unlock($1::bigint)::text", {list_lock});
  join.join();
  REQUIRE(waiting);
  CHECK(stored.result == storage::store_outcome::status::stored);
  CHECK(took < std::chrono::seconds(2));
  CHECK(joined.committed);
}

TEST_CASE_METHOD(membership_fixture,
                 "a reload of every community cut short by the database is done again, not replaced"
                 " by a version check",
                 "[integration][authority]") {
  // After a failover that lost commits, the new primary may hold the version a pod holds, with
  // other content: the LISTEN connection coming back reloads everything, and a reload the
  // database cut short must be finished, since comparing versions cannot see the difference.
  actor_world world;
  const std::string id = std::to_string(community);
  // A change the triggers number: the pod holds a version above 0, where versions decide.
  (void)scalar(connection, "INSERT INTO members (community_id, pubkey, role) VALUES ($1::bigint, '\\x"
                             + protocol::to_hex(key_of(76)) + "'::bytea, 'member')", {id});
  auto handle = world.registry->ensure(community, [&] { return storage::load_access(connection, community); });
  REQUIRE(handle);
  REQUIRE(handle->members->version() > 0);
  auto watcher = world.spawn_detached(
    actors::access_watcher,
    actors::access_watcher_args{database.conninfo(), world.registry, world.idle, world.metrics,
                                std::chrono::milliseconds(50)});
  const auto newcomer = key_of(77);
  // The same version, another content: a member row written with the triggers quiet, as a
  // promoted standby that missed a change and then took another may hold.
  (void)scalar(connection, "SET session_replication_role = replica");
  (void)scalar(connection, "INSERT INTO members (community_id, pubkey, role) VALUES ($1::bigint, '\\x"
                             + protocol::to_hex(newcomer) + "'::bytea, 'member')", {id});
  (void)scalar(connection, "SET session_replication_role = DEFAULT");
  // The database refuses connections while the watcher's is cut: its reload fails.
  storage::pg_connection admin(admin_conninfo());
  const auto mine = scalar(connection, "SELECT pg_backend_pid()");
  (void)scalar(admin, "ALTER DATABASE " + database.name() + " ALLOW_CONNECTIONS false");
  (void)scalar(admin, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                      " WHERE datname = $1::text AND pid <> $2::int",
               {database.name(), mine});
  caf::anon_send(watcher, actors::reload_atom_v);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(handle->members->is_member(newcomer));
  (void)scalar(admin, "ALTER DATABASE " + database.name() + " ALLOW_CONNECTIONS true");
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    seen = handle->members->is_member(newcomer);
  }
  CHECK(seen);
}

TEST_CASE_METHOD(membership_fixture,
                 "a hand edit is loaded by the version check after a write of this pod's that changed"
                 " nothing took its version",
                 "[integration][authority]") {
  // A member's join again (Flotilla joins each time a space opens) commits at the database's
  // version, with no bump and no notification: the members' version then equals the database's
  // while the access the pod holds is older.
  actor_world world;
  const std::string id = std::to_string(community);
  const auto member = key_of(79);
  REQUIRE(apply(command(membership_change::add_member, member)).committed);
  auto handle = world.registry->ensure(community, [&] { return storage::load_access(connection, community); });
  REQUIRE(handle);
  REQUIRE(handle->members->closed() == false);
  (void)scalar(connection, "UPDATE communities SET access = 'closed' WHERE id = $1::bigint RETURNING 1", {id});
  auto again = apply(command(membership_change::add_member, member));
  REQUIRE(again.committed);
  REQUIRE(again.state_version == version_of(connection, community));
  caf::anon_send(handle->actor, actors::applied_atom_v, again);
  for (int i = 0; i < 200 && handle->members->version() < again.state_version; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(handle->members->version() == again.state_version);
  REQUIRE(handle->members->whole_version() < again.state_version);
  auto watcher = world.spawn_detached(
    actors::access_watcher,
    actors::access_watcher_args{database.conninfo(), world.registry, world.idle, world.metrics,
                                std::chrono::milliseconds(50)});
  bool closed = false;
  for (int i = 0; i < 300 && !closed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    closed = handle->members->closed() == true;
  }
  CHECK(closed);
  CHECK(handle->members->whole_version() == again.state_version);
}

TEST_CASE_METHOD(membership_fixture, "a host removed or moved by hand notifies the pods, as an access change",
                 "[integration][authority]") {
  // The notice makes every pod forget its cached host answers (access_watcher on_notice), so a
  // removed host stops reaching its old community at once.
  listening l{database.conninfo()};
  REQUIRE(l.eventually([&] { return l.connects.load() == 1; }));
  const std::string id = std::to_string(community);
  (void)scalar(connection, "INSERT INTO community_hosts (host, community_id) VALUES ('alias.example', $1::bigint)"
                           " RETURNING 1", {id});
  auto before = version_of(connection, community);
  (void)scalar(connection, "DELETE FROM community_hosts WHERE host = 'alias.example' RETURNING 1");
  REQUIRE(l.eventually([&] { return !l.notices().empty(); }));
  CHECK(l.notices().back().community_id == community);
  CHECK(l.notices().back().version == version_of(connection, community));
  CHECK(l.notices().back().version > before);
  CHECK_FALSE(l.notices().back().wrote_events);
}

TEST_CASE_METHOD(membership_fixture, "closing or archiving a community waits for the event batches in flight",
                 "[integration][access][race]") {
  // A batch in flight holds the community's event lock shared from before its snapshot (which
  // read the community open, or not archived) to its commit: the change waits for it, so no
  // event it refuses is committed after it.
  auto waits_for_a_batch = [&](const std::function<void()>& change) {
    return waits_for_event_batch(database.conninfo(), connection, community, change);
  };
  storage::access_switch closed;
  CHECK(waits_for_a_batch([&] { closed = communities.set_access(community, true, relay_key, now_seconds()); }));
  CHECK(closed.result == storage::lifecycle_result::changed);
  storage::lifecycle_result archived = storage::lifecycle_result::failed;
  CHECK(waits_for_a_batch([&] { archived = communities.set_archived(community, true); }));
  CHECK(archived == storage::lifecycle_result::changed);
}

