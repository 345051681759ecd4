// SPDX-License-Identifier: MIT
// The community actor's membership writes, access and bans, on CAF's deterministic scheduler
// (community_fixture.hpp); its room requests are in community_rooms_test.cpp.
#include "community_fixture.hpp"

using namespace comb;
using namespace comb::actors;
using namespace comb::test_community;

namespace {

/// The database's state of the closed community 1 at `version`, with `members`.
storage::community_access closed_state(std::int64_t version, std::vector<storage::member> members) {
  storage::community_access state;
  state.community_id = 1;
  state.exists = true;
  state.closed = true;
  state.version = version;
  state.members = std::move(members);
  return state;
}

} // namespace

TEST_CASE_METHOD(fixture, "queued commands are applied in arrival order, each with its outcome",
                 "[actor][community]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run_once(); // the community actor takes command 1 and starts a batch
  queue(2, cmd(membership_change::add_member, 3));
  queue(3, cmd(membership_change::add_member, 2));
  queue(4, cmd(membership_change::remove_member, 3));
  scheduler->run();
  REQUIRE(db->batches.size() == 2); // one in flight, the other three grouped behind it
  CHECK(db->batches[1].size() == 3);
  CHECK(seen->replies
        == std::vector<std::pair<std::uint64_t, outcome>>{
          {1, outcome::changed}, {2, outcome::changed}, {3, outcome::already_member}, {4, outcome::changed}});
  CHECK(cache->is_member(key(2)));
  CHECK_FALSE(cache->is_member(key(3)));
  CHECK(seen->revoked.empty()); // 3 came and went inside one batch: nobody lost access
  queue(5, cmd(membership_change::remove_member, 2));
  scheduler->run();
  CHECK(seen->revoked == std::vector<pubkey_list>{{key(2)}});
}

TEST_CASE_METHOD(fixture, "a failed batch fails every command in it and leaves the cache alone",
                 "[actor][community]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(cache->is_member(key(2)));
  int published_before = seen->published;

  db->fail_batch = 2; // batches: [1], [2], then [3, 4] fails as a whole
  queue(2, cmd(membership_change::add_member, 6));
  scheduler->run_once();
  queue(3, cmd(membership_change::remove_member, 2));
  queue(4, cmd(membership_change::add_member, 4));
  scheduler->run();
  REQUIRE(db->batches.size() == 3);
  CHECK(db->batches[2].size() == 2);
  CHECK(seen->replies
        == std::vector<std::pair<std::uint64_t, outcome>>{
          {1, outcome::changed}, {2, outcome::changed}, {3, outcome::failed}, {4, outcome::failed}});
  CHECK(cache->is_member(key(2)));
  CHECK(cache->is_member(key(6)));
  CHECK_FALSE(cache->is_member(key(4)));
  CHECK(seen->published == published_before + 1); // only batch [2]'s list
  CHECK(seen->revoked.empty());

  queue(5, cmd(membership_change::add_member, 4)); // and the community carries on
  scheduler->run();
  CHECK(seen->replies.back() == std::pair<std::uint64_t, outcome>{5, outcome::changed});
  CHECK(cache->is_member(key(4)));
}

TEST_CASE_METHOD(fixture, "commands that must wait for the next second go together then",
                 "[actor][community]") {
  db->wait_batch = 0; // the first batch finds a list in this second
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(db->batches.size() == 1);
  CHECK(seen->replies.empty()); // nobody is answered while waiting
  queue(2, cmd(membership_change::add_member, 3));
  queue(3, cmd(membership_change::add_member, 2));
  scheduler->run();
  CHECK(db->batches.size() == 1); // still waiting: the newcomers queue behind
  scheduler->trigger_timeouts(); // the next second begins
  scheduler->run();
  REQUIRE(db->batches.size() == 2);
  CHECK(db->batches[1].size() == 3); // one transaction, each command with its own outcome
  CHECK(seen->replies
        == std::vector<std::pair<std::uint64_t, outcome>>{
          {1, outcome::changed}, {2, outcome::changed}, {3, outcome::already_member}});
}

TEST_CASE_METHOD(fixture, "a ban or a removal ends a wait for the clock and goes with what waited",
                 "[actor][community]") {
  auto removal = GENERATE(membership_change::ban_pubkey, membership_change::remove_member);
  db->wait_batch = 0; // a list far ahead: the join must wait for its second
  queue(1, cmd(membership_change::add_member, 2));
  auto leave = cmd(membership_change::remove_member, 4);
  leave.requested_by = leave.subject; // a user's own leave waits, as joins do
  queue(3, leave);
  scheduler->run();
  REQUIRE(db->batches.size() == 1);
  queue(2, cmd(removal, 3));
  scheduler->run(); // no timeout fired: the removal did not wait for the clock
  REQUIRE(db->batches.size() == 2);
  CHECK(db->batches[1].size() == 3); // in their order, one transaction
  CHECK(db->batches[1][2].change == removal);
  CHECK(seen->replies.size() == 3);
  scheduler->trigger_timeouts(); // the first wait's wake is stale: nothing more goes
  scheduler->run();
  CHECK(db->batches.size() == 2);
}

TEST_CASE_METHOD(fixture, "a removal behind more than a batch of joins goes in the next batch, after a wait too",
                 "[actor][community]") {
  db->wait_batch = 0;  // a list far ahead: the first join waits
  db->more_waits = {1}; // the list is a second ahead: the batch with the removal waits once too
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  const std::uint64_t joins = 600; // past the batch bound (512)
  for (std::uint64_t ticket = 2; ticket < 2 + joins; ++ticket)
    queue(ticket, cmd(membership_change::add_member, static_cast<std::uint8_t>(ticket % 200 + 3)));
  scheduler->run();
  REQUIRE(db->batches.size() == 1);
  queue(2 + joins, cmd(membership_change::ban_pubkey, 250));
  scheduler->run();
  REQUIRE(db->batches.size() == 2);
  CHECK(db->batches[1].size() == joins + 2);
  scheduler->trigger_timeouts(); // its second begins
  scheduler->run();
  REQUIRE(db->batches.size() == 3);
  CHECK(db->batches[2].size() == joins + 2); // not 512 joins waiting for a second of their own
  CHECK(seen->replies.size() == joins + 2);
}

TEST_CASE_METHOD(fixture, "a ban queued while a batch runs does not wait when that batch must",
                 "[actor][community]") {
  db->wait_batch = 0;
  queue(1, cmd(membership_change::add_member, 2));
  queue(2, cmd(membership_change::ban_pubkey, 3)); // queued before the first batch answers
  scheduler->run();
  REQUIRE(db->batches.size() == 2);
  CHECK(db->batches[0].size() == 1);
  CHECK(db->batches[1].size() == 2);
  CHECK(seen->replies.size() == 2);
}

TEST_CASE_METHOD(fixture, "a write over a change not loaded yet leaves its events to the access watcher",
                 "[actor][community]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(cache->whole_version() == 1);
  const int published_before = seen->published;
  CHECK(published_before > 0); // its list and delta: the cache holds the write whole
  db->version = 2; // comb-admin closed the community; the reload has not come yet
  queue(2, cmd(membership_change::add_member, 3));
  scheduler->run();
  REQUIRE(seen->replies.size() == 2);
  CHECK(cache->whole_version() < 3);
  CHECK(seen->published == published_before); // checked by the open community's rules, it would leak
}

TEST_CASE_METHOD(fixture, "the database's state replaces the cache only when it is newer",
                 "[actor][community]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(cache->version() == 1);
  auto state = closed_state(5, {{key(3), storage::member_role::member}});
  caf::anon_send(community, refresh_atom_v, state);
  scheduler->run();
  CHECK(cache->version() == 5);
  CHECK(cache->closed() == std::optional<bool>(true));
  CHECK(cache->is_member(key(3)));
  CHECK_FALSE(cache->is_member(key(2)));
  CHECK(seen->revoked == std::vector<pubkey_list>{{key(2)}}); // revoked at once

  auto stale = state; // an older state (a late reload) never rolls the cache back
  stale.version = 4;
  stale.closed = false;
  stale.members = {};
  caf::anon_send(community, refresh_atom_v, stale);
  scheduler->run();
  CHECK(cache->version() == 5);
  CHECK(cache->is_member(key(3)));
  CHECK(cache->closed() == std::optional<bool>(true));
}

TEST_CASE_METHOD(fixture, "a state read at version 0 that arrives after a newer one is old too",
                 "[actor][community]") {
  // A community never changed is at version 0 (the cache's own): a state read then, whose
  // delivery lagged behind the first change's reload, must not take the change back.
  REQUIRE(cache->version() == 0);
  caf::anon_send(community, refresh_atom_v, closed_state(2, {{key(3), storage::member_role::member}}));
  scheduler->run();
  REQUIRE(cache->is_member(key(3)));
  caf::anon_send(community, refresh_atom_v, closed_state(0, {}));
  scheduler->run();
  CHECK(cache->version() == 2);
  CHECK(cache->is_member(key(3)));
}

TEST_CASE_METHOD(fixture, "a rewound database's state replaces the cache whatever its version",
                 "[actor][community][access]") {
  auto state = closed_state(5, {{key(2), storage::member_role::member}, {key(3), storage::member_role::admin}});
  state.bans.pubkeys = {{key(9), ""}};
  caf::anon_send(community, refresh_atom_v, state);
  scheduler->run();
  REQUIRE(cache->whole_version() == 5);

  // The database went back to version 2 (a restore): open, 3 a plain member, 2 gone, 9 not banned.
  auto restored = state;
  restored.version = 2;
  restored.closed = false;
  restored.members = {{key(3), storage::member_role::member}};
  restored.bans = {};
  caf::anon_send(community, refresh_atom_v, restored);
  scheduler->run();
  CHECK(cache->is_member(key(2))); // a refresh never goes back...
  caf::anon_send(community, rewind_atom_v, restored);
  scheduler->run();
  CHECK_FALSE(cache->is_member(key(2))); // ...a rewind does
  CHECK(cache->role_of(key(3)) == std::optional(storage::member_role::member));
  CHECK(cache->closed() == std::optional<bool>(false));
  CHECK_FALSE(bans->is_banned_pubkey(key(9)));
  CHECK(cache->version() == 2);
  CHECK(cache->whole_version() == 2);
  auto revoked = seen->revoked.back();
  std::sort(revoked.begin(), revoked.end());
  CHECK(revoked == pubkey_list{key(2), key(3)}); // removed, and demoted

  // From there on the database's versions count again.
  restored.version = 3;
  restored.members = {};
  caf::anon_send(community, refresh_atom_v, restored);
  scheduler->run();
  CHECK_FALSE(cache->is_member(key(3)));
  CHECK(cache->whole_version() == 3);
}

TEST_CASE_METHOD(fixture, "a state retaken as LISTEN came back counts at the pod's version, not below it",
                 "[actor][community][access]") {
  auto state = closed_state(5, {{key(2), storage::member_role::member}, {key(3), storage::member_role::member}});
  caf::anon_send(community, refresh_atom_v, state);
  scheduler->run();
  REQUIRE(cache->whole_version() == 5);
  // A failover's new primary holds version 5 too, where another pod removed 3.
  auto other_timeline = state;
  other_timeline.members = {{key(2), storage::member_role::member}};
  caf::anon_send(community, refresh_atom_v, other_timeline);
  scheduler->run();
  CHECK(cache->is_member(key(3))); // a refresh sees nothing new at version 5...
  caf::anon_send(community, retake_atom_v, other_timeline);
  scheduler->run();
  CHECK_FALSE(cache->is_member(key(3))); // ...a retake takes it
  CHECK(cache->whole_version() == 5);

  // Read before this pod's own write committed: the pod keeps what it wrote.
  db->version = 5;
  db->members = other_timeline.members;
  queue(1, cmd(membership_change::add_member, 4));
  scheduler->run();
  REQUIRE(cache->is_member(key(4)));
  REQUIRE(cache->version() > 5);
  // Read before this pod's own write: kept as it is, and the watcher is asked to read again.
  auto asked_again = std::make_shared<std::vector<std::int64_t>>();
  auto stale_reader = system->spawn([=, target = community](caf::event_based_actor* me) -> caf::behavior {
    return {
      [=](retake_atom, std::int64_t id) { asked_again->push_back(id); },
      [=](const storage::community_access& read) { me->send(target, retake_atom_v, read); },
    };
  });
  caf::anon_send(stale_reader, other_timeline);
  scheduler->run();
  CHECK(cache->is_member(key(4)));
  CHECK(*asked_again == std::vector<std::int64_t>{1});
  // Deleted while LISTEN was down: closed, whatever the version.
  storage::community_access gone;
  gone.community_id = 1;
  gone.exists = false;
  caf::anon_send(stale_reader, gone);
  scheduler->run();
  CHECK(cache->ended());
  CHECK(asked_again->size() == 1);
  caf::anon_send_exit(stale_reader, caf::exit_reason::user_shutdown);
  scheduler->run();
}

TEST_CASE_METHOD(fixture, "committed bans reach the ban cache with the member removed",
                 "[actor][community]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(cache->is_member(key(2)));
  queue(2, cmd(membership_change::ban_pubkey, 2));
  scheduler->run();
  CHECK(seen->replies.back() == std::pair<std::uint64_t, outcome>{2, outcome::changed});
  CHECK_FALSE(cache->is_member(key(2)));
  CHECK(bans->is_banned_pubkey(key(2)));
  CHECK(seen->revoked == std::vector<pubkey_list>{{key(2)}});

  db->fail_batch = db->batches.size(); // a failed unban changes nothing
  queue(3, cmd(membership_change::unban_pubkey, 2));
  scheduler->run();
  CHECK(bans->is_banned_pubkey(key(2)));
  // Event bans are not the community actor's: the management actor writes them into the ban
  // list before it answers (e2e nip86 "bans an event").
}

TEST_CASE_METHOD(fixture, "an access switch and a ban another writer made are applied after this pod's own write passed them",
                 "[actor][community][access]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(cache->whole_version() == 1);
  // comb-admin closes the community and another pod bans 9 (version 2); before this pod's
  // watcher reloads, its own writer commits a join on top of it (version 3).
  ++db->version;
  queue(2, cmd(membership_change::add_member, 3));
  scheduler->run();
  REQUIRE(cache->version() == 3);
  CHECK(cache->whole_version() == 1); // the watcher must still reload: the switch is not here
  CHECK_FALSE(cache->closed().value_or(false));

  storage::community_access state;
  state.community_id = 1;
  state.exists = true;
  state.closed = true;
  state.version = 3; // the reload reads the database as it is now
  state.members = db->members;
  state.bans.pubkeys = {{key(9), ""}};
  caf::anon_send(community, refresh_atom_v, state);
  scheduler->run();
  CHECK(cache->closed() == std::optional<bool>(true));
  CHECK(bans->is_banned_pubkey(key(9)));
  CHECK(cache->whole_version() == 3);

  // The next own write follows on from a state the cache holds whole.
  queue(3, cmd(membership_change::add_member, 4));
  scheduler->run();
  CHECK(cache->whole_version() == 4);
}

TEST_CASE_METHOD(fixture, "a reload older than this pod's own ban takes its access but keeps the ban",
                 "[actor][community][access]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  ++db->version; // another writer closed the community (version 2)
  queue(2, cmd(membership_change::ban_pubkey, 2)); // this pod bans 2 (version 3)
  scheduler->run();
  REQUIRE(bans->is_banned_pubkey(key(2)));
  storage::community_access late; // read at version 2, before the ban, and delivered after it
  late.community_id = 1;
  late.exists = true;
  late.closed = true;
  late.version = 2;
  late.members = {{key(2), storage::member_role::member}};
  caf::anon_send(community, refresh_atom_v, late);
  scheduler->run();
  CHECK(cache->closed() == std::optional<bool>(true)); // the switch is enforced at once
  CHECK(bans->is_banned_pubkey(key(2)));               // the own ban is not rolled back
  CHECK_FALSE(cache->is_member(key(2)));
  CHECK(cache->whole_version() < 3); // so the watcher reloads the bans as of now
}

TEST_CASE_METHOD(fixture, "a reload this pod's own writes overtook still brings another writer's ban",
                 "[actor][community][access]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  ++db->version; // another pod bans 9 (version 2)
  queue(2, cmd(membership_change::ban_pubkey, 2)); // this pod bans 2 (version 3)
  scheduler->run();
  storage::community_access late; // read at version 2, delivered after this pod's version 3
  late.community_id = 1;
  late.exists = true;
  late.version = 2;
  late.members = {{key(2), storage::member_role::member}};
  late.bans.pubkeys = {{key(9), ""}};
  caf::anon_send(community, refresh_atom_v, late);
  scheduler->run();
  CHECK(bans->is_banned_pubkey(key(9))); // another pod's ban is enforced without waiting
  CHECK(bans->is_banned_pubkey(key(2))); // this pod's newer ban stays
  CHECK(cache->whole_version() == 2);    // still behind: the watcher reloads again
  CHECK(bans->own_changes_kept() == 1);  // this pod's ban, replayed on reloads older than it

  // The next reload is as new as the database; own writes after it confirm on what it loaded,
  // and keep nothing for replay.
  late.version = 3;
  late.bans.pubkeys = {{key(9), ""}, {key(2), ""}};
  caf::anon_send(community, refresh_atom_v, late);
  scheduler->run();
  CHECK(bans->own_changes_kept() == 0);
  queue(3, cmd(membership_change::ban_pubkey, 3));
  scheduler->run();
  CHECK(cache->whole_version() == 4);
  CHECK(bans->is_banned_pubkey(key(3)));
  CHECK(bans->own_changes_kept() == 0);
}

TEST_CASE_METHOD(fixture, "another writer's events reach the fan-out after the state reloaded for them",
                 "[actor][community][access]") {
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  seen->fanout_log.clear();
  // The watcher reloads a change that removed 2, then hands over the events it wrote.
  storage::community_access state;
  state.community_id = 1;
  state.exists = true;
  state.version = 7;
  caf::anon_send(community, refresh_atom_v, state);
  auto delta = test::sign_event(author, 8001, "", {{"p", protocol::to_hex(key(2))}});
  caf::anon_send(community, publish_atom_v,
                 committed_event{1, {std::make_shared<const protocol::event>(delta),
                                     std::make_shared<const std::string>(protocol::render_event_json(delta))}});
  scheduler->run();
  CHECK(seen->fanout_log == std::vector<std::string>{"revoke", "publish"});
  CHECK_FALSE(cache->is_member(key(2)));
}

TEST_CASE_METHOD(fixture, "past its bound a community's queue answers busy at once",
                 "[actor][community][bounds]") {
  hold_the_writer();
  for (std::uint64_t ticket = 2; ticket <= max_queued_commands + 1; ++ticket)
    queue(ticket, cmd(membership_change::add_member, static_cast<std::uint8_t>(ticket % 200 + 3)));
  scheduler->run();
  CHECK(seen->replies
        == std::vector<std::pair<std::uint64_t, outcome>>{{max_queued_commands + 1, outcome::busy}});
  queue_room(1, "pizza"); // room requests have their own queue
  scheduler->trigger_timeouts();
  scheduler->run();
  CHECK(seen->replies.size() == max_queued_commands + 1); // the others were answered in turn
  CHECK(seen->room_replies.size() == 1);
}

TEST_CASE_METHOD(fixture, "joins and leaves fill only their lane of the queue, the rest is kept for admins",
                 "[actor][community][bounds]") {
  hold_the_writer();
  auto self_request = [](std::uint64_t ticket) {
    auto c = cmd(ticket % 2 == 0 ? membership_change::claim_membership : membership_change::remove_member,
                 static_cast<std::uint8_t>(ticket % 200 + 3));
    c.requested_by = c.subject;
    return c;
  };
  const std::uint64_t last_in_lane = 1 + max_queued_self_requests;
  for (std::uint64_t ticket = 2; ticket <= last_in_lane + 2; ++ticket)
    queue(ticket, self_request(ticket));
  scheduler->run();
  using reply = std::pair<std::uint64_t, outcome>;
  CHECK(seen->replies == std::vector<reply>{{last_in_lane + 1, outcome::busy}, {last_in_lane + 2, outcome::busy}});

  // The operator's add, and an admin's removal of a joiner, still find a place; the removal
  // does not wait for the clock, and takes everything queued before it along.
  queue(last_in_lane + 3, cmd(membership_change::add_member, 250));
  scheduler->run();
  CHECK(seen->replies.size() == 2);
  auto removal = cmd(membership_change::remove_member, 5);
  removal.requested_by = key(1);
  queue(last_in_lane + 4, removal);
  scheduler->run();
  REQUIRE(seen->replies.size() == last_in_lane + 4);
  CHECK(seen->replies.back().first == last_in_lane + 4);
  CHECK(seen->replies.back().second != outcome::busy);
  CHECK(db->batches.size() == 2); // past the batch bound, through the removal
}

TEST_CASE_METHOD(fixture, "an archive marks the community ended before its sessions are closed, an unarchive clears it",
                 "[actor][community]") {
  auto hooks = std::make_shared<community_hooks>();
  std::vector<bool> ended_at_close;
  hooks->set([&](std::int64_t) { ended_at_close.push_back(cache->ended()); }, [](std::int64_t) {}, [](std::int64_t) {});
  auto watched = system->spawn(community_actor,
                               community_args{1, cache, writer, watcher, {}, 512, nullptr, hooks, bans});
  storage::community_access state;
  state.community_id = 1;
  state.exists = true;
  state.version = 2;
  caf::anon_send(watched, refresh_atom_v, state);
  scheduler->run();
  CHECK_FALSE(cache->ended());
  state.archived = true;
  state.version = 3;
  caf::anon_send(watched, refresh_atom_v, state);
  scheduler->run();
  // Sessions registering from here on see the mark, the open ones were closed after it.
  CHECK(ended_at_close == std::vector<bool>{true});
  CHECK(cache->ended());
  state.archived = false;
  state.version = 4;
  caf::anon_send(watched, refresh_atom_v, state);
  scheduler->run();
  CHECK_FALSE(cache->ended());
  // A room write's state, read before the unarchive, arrives after it: it archives nothing.
  state.archived = true;
  state.version = 3;
  caf::anon_send(watched, refresh_atom_v, state);
  scheduler->run();
  CHECK_FALSE(cache->ended());
  CHECK(ended_at_close.size() == 1);
  caf::anon_send_exit(watched, caf::exit_reason::user_shutdown);
  scheduler->run();
}
