// SPDX-License-Identifier: MIT
#pragma once

// The community actor on CAF's deterministic scheduler with a fake membership writer that
// applies batches in memory and can be told to fail; shared by the community actor's tests.
#include <algorithm>
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <set>

#include "test_system.hpp"
#include "actors/community/community_actor.hpp"
#include "actors/messages.hpp"
#include "protocol/canonical_json.hpp"
#include "storage/membership_rules.hpp"
#include "support/signed_events.hpp"

namespace comb::test_community {

using namespace comb::actors;
using storage::membership_change;
using outcome = storage::membership_outcome;


struct fake_membership_db {
  std::vector<storage::member> members;
  std::vector<std::vector<storage::membership_command>> batches;
  std::optional<std::size_t> fail_batch; ///< index in `batches` of the batch to fail
  std::optional<std::size_t> wait_batch; ///< index of a batch told to wait for the next second
  std::set<std::size_t> more_waits;      ///< indexes of other batches told to wait
  std::int64_t version = 0;
  std::vector<std::string> room_requests; ///< rooms named by room requests, in arrival order
  std::optional<std::size_t> room_wait;   ///< index of a room request told to wait a second
  std::vector<std::size_t> room_batches;  ///< the size of each room batch the writer was sent
  bool room_state_unread = false;         ///< the read after a room commit fails
  bool remove_from_rooms = false;         ///< membership writes say they rewrote the rooms
};

/// A committed room batch: each request stored, and the community's state read afterwards,
/// with every room named so far, private.
inline room_applied room_write_of(fake_membership_db& db, const std::vector<storage::room_command>& commands) {
  room_applied applied;
  ++db.version;
  for (const auto& command : commands) {
    db.room_requests.push_back(command.request.room);
    storage::room_write write;
    write.committed = true;
    write.outcome = protocol::room_outcome::changed;
    write.events.push_back({command.ev, command.json});
    write.state_version = db.version;
    applied.batch.writes.push_back(std::move(write));
  }
  storage::community_access access;
  access.community_id = 1;
  access.exists = true;
  access.version = db.version;
  access.members = db.members;
  for (const auto& id : db.room_requests) {
    protocol::room_state room;
    room.exists = true;
    room.id = id;
    room.meta.flags.is_private = true;
    access.rooms.push_back(room);
  }
  if (!db.room_state_unread)
    applied.access = access;
  return applied;
}

/// Applies each batch with the real role rules to an in-memory roster, or fails it whole.
inline caf::behavior fake_membership_writer(caf::event_based_actor* self,
                                     std::shared_ptr<fake_membership_db> db) {
  return {
    [=](apply_atom, std::int64_t, const std::vector<storage::membership_command>& commands) {
      db->batches.push_back(commands);
      storage::membership_write write;
      if (db->wait_batch == db->batches.size() - 1 || db->more_waits.contains(db->batches.size() - 1)) {
        write.error = "waiting";
        write.results.assign(commands.size(), storage::membership_result::of(outcome::failed));
        write.retry_at = test::unix_now() + 1;
      } else if (db->fail_batch == db->batches.size() - 1) {
        write.error = "injected failure";
        write.results.assign(commands.size(), storage::membership_result::of(outcome::failed));
      } else {
        storage::roster roster(db->members);
        std::map<std::string, storage::invite_state> invites;
        std::set<protocol::bytes32> banned;
        auto plan = storage::plan_membership(roster, commands, invites, {}, banned, test::unix_now());
        write.committed = true;
        for (auto o : plan.outcomes)
          write.results.push_back(storage::membership_result::of(o));
        write.members = roster.members();
        db->members = roster.members();
        write.previous_version = db->version;
        write.state_version = ++db->version;
        if (db->remove_from_rooms)
          write.rooms.emplace(); // every room emptied of the removed member: none left here
        if (plan.list_changed) {
          write.list.emplace();
          write.list->kind = 13534;
          write.list_json = protocol::render_event_json(*write.list);
        }
      }
      self->send(caf::actor_cast<caf::actor>(self->current_sender()), applied_atom_v, write);
    },
    [=](room_apply_atom, std::int64_t, const std::vector<storage::room_command>& commands) {
      room_applied applied;
      db->room_batches.push_back(commands.size());
      if (db->room_wait == db->room_requests.size()) {
        db->room_wait.reset();
        applied.batch.retry_at = test::unix_now() + 1;
      } else {
        applied = room_write_of(*db, commands);
      }
      self->send(caf::actor_cast<caf::actor>(self->current_sender()), room_applied_atom_v, applied);
    },
  };
}

/// Collects member_done replies in arrival order, and what the fan-out is told.
struct observations {
  std::vector<std::pair<std::uint64_t, outcome>> replies;
  std::vector<pubkey_list> revoked;
  int published = 0;
  std::vector<std::pair<std::uint64_t, protocol::room_outcome>> room_replies;
  std::vector<std::size_t> rooms_known_at_reply;
  member_cache_ptr cache;
  std::vector<std::string> fanout_log; ///< "publish" and "revoke", in the order the fan-out heard
};

inline caf::behavior observer(caf::event_based_actor*, std::shared_ptr<observations> seen) {
  return {
    [=](member_done_atom, std::uint64_t ticket, const storage::membership_result& result) {
      seen->replies.emplace_back(ticket, result.outcome);
    },
    [=](room_done_atom, std::uint64_t ticket, protocol::room_outcome result) {
      seen->room_replies.emplace_back(ticket, result);
      // By the time the requester hears, the rooms its connection checks include this one.
      seen->rooms_known_at_reply.push_back(seen->cache->rooms()->size());
    },
    [=](publish_atom, const committed_event&) {
      ++seen->published;
      seen->fanout_log.emplace_back("publish");
    },
    [=](revoke_atom, std::int64_t, const pubkey_list& pubkeys) {
      seen->revoked.push_back(pubkeys);
      seen->fanout_log.emplace_back("revoke");
    },
  };
}

struct fixture : comb::test::test_system {
  std::shared_ptr<fake_membership_db> db = std::make_shared<fake_membership_db>();
  std::shared_ptr<observations> seen = std::make_shared<observations>();
  member_cache_ptr cache = std::make_shared<member_cache>();
  ban_list_ptr bans = std::make_shared<ban_list>();
  caf::actor writer, watcher, community;

  fixture() {
    seen->cache = cache;
    writer = system->spawn(fake_membership_writer, db);
    watcher = system->spawn(observer, seen);
    community = system->spawn(community_actor, community_args{1, cache, writer, watcher, {}, 512, nullptr, nullptr, bans});
  }

  ~fixture() {
    for (auto& a : {writer, watcher, community})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    scheduler->run();
  }

  /// Queues a room request for `room` as if `watcher` had sent it.
  void queue_room(std::uint64_t ticket, const std::string& room, const std::string& content = "",
                  const protocol::key_pair* who = nullptr, std::uint32_t kind = protocol::room_join_kind) {
    auto ev = test::sign_event(who ? *who : author, kind, content, {{"h", room}});
    auto request = protocol::parse_room_request(ev);
    REQUIRE(request);
    caf::send_as(watcher, community, room_atom_v, ticket,
                 storage::room_command{ev, protocol::render_event_json(ev), request.value()});
  }

  protocol::key_pair author = protocol::key_pair::generate();

  /// Queues a command as if `watcher` had sent it, without running anything yet.
  void queue(std::uint64_t ticket, storage::membership_command c);

  /// The writer's first batch (ticket 1) waits for the next second: what follows fills the queue.
  void hold_the_writer();
};

inline void fixture::queue(std::uint64_t ticket, storage::membership_command c) {
  caf::send_as(watcher, community, member_atom_v, ticket, std::move(c));
}

inline storage::membership_command cmd(membership_change change, std::uint8_t who);

inline void fixture::hold_the_writer() {
  db->wait_batch = 0;
  queue(1, cmd(membership_change::add_member, 2));
  scheduler->run();
  REQUIRE(seen->replies.empty());
}

inline storage::membership_command cmd(membership_change change, std::uint8_t who) {
  storage::membership_command c;
  c.change = change;
  c.subject.fill(who);
  return c;
}

inline protocol::bytes32 key(std::uint8_t who) {
  protocol::bytes32 k;
  k.fill(who);
  return k;
}

} // namespace comb::test_community
