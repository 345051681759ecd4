// SPDX-License-Identifier: MIT
// The connection actor and the fan-out on CAF's deterministic scheduler, with a fake storage
// actor that answers from memory and releases history replies only when the test says so.
#pragma once

#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <algorithm>
#include <mutex>

#include "test_system.hpp"
#include "actors/community/ban_list.hpp"
#include "actors/connection/connection_actor.hpp"
#include "actors/fanout/fanout_actor.hpp"
#include "actors/messages.hpp"
#include "protocol/nip42.hpp"
#include "protocol/relay_message.hpp"
#include "support/signed_events.hpp"

namespace comb::test_connection {

using namespace comb::actors;


using release_atom = caf::atom_constant<caf::atom("release")>;

/// Records what a connection would write to its socket.
class recording_sink final : public frame_sink {
public:
  void send(std::string frame) override {
    std::lock_guard lock(mutex_);
    if (std::exchange(fail_next_send_, false))
      throw std::runtime_error("a sink that fails (a stand-in for a bug)");
    frames_.push_back(std::move(frame));
  }
  void close(close_reason why) override {
    if (why == close_reason::policy)
      drop_events();
    closed_ = why;
  }
  /// As the outbox does: the event frames not yet taken go, the rest stays.
  void drop_events() override {
    std::lock_guard lock(mutex_);
    std::erase_if(frames_, [](const std::string& frame) { return frame.starts_with(R"(["EVENT",)"); });
  }
  [[nodiscard]] std::optional<close_reason> closed() const { return closed_; }
  void fail_next_send() {
    std::lock_guard lock(mutex_);
    fail_next_send_ = true;
  }

  std::vector<std::string> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(frames_, {});
  }

private:
  std::mutex mutex_;
  std::vector<std::string> frames_;
  std::optional<close_reason> closed_;
  bool fail_next_send_ = false;
};

/// What the fake storage holds and has been asked.
struct fake_store {
  std::vector<protocol::event> events;
  std::vector<history_request> held_queries;
  int store_calls = 0;
  int count_calls = 0;
  std::int64_t count_read_at = 0; ///< the state version each COUNT says it was read at
  caf::actor fanout; ///< told about each stored event, as the real writer does
  bool hold_writes = false;      ///< store requests wait in held_writes, unanswered
  std::vector<ok_route> held_writes;
};

/// Answers like the storage writer and a reader: stores in memory (duplicates noticed),
/// queries with real filter matching, and holds each history reply until `release`.
inline caf::behavior fake_storage(caf::event_based_actor* self, std::shared_ptr<fake_store> store) {
  return {
    [=](store_atom, const ok_route& route, const storage::event_write& write) {
      ++store->store_calls;
      if (store->hold_writes) {
        store->held_writes.push_back(route);
        return;
      }
      std::string message;
      for (const auto& ev : store->events)
        if (ev.id == write.ev->id)
          message = "duplicate: already have this event";
      if (message.empty()) {
        store->events.push_back(*write.ev);
        self->send(store->fanout, publish_atom_v, committed_event{write.community_id, {write.ev, write.json}});
      }
      // As the writer does: the OK straight to the socket, then counted answered.
      route.sink->send(protocol::render_ok(route.event_id_hex, true, message));
      route.answered->fetch_add(1, std::memory_order_release);
    },
    [=](query_atom, const history_request& request) { store->held_queries.push_back(request); },
    [=](release_atom) {
      for (auto& request : store->held_queries) {
        storage::query_result result{true, {}, {}};
        for (auto it = store->events.rbegin(); it != store->events.rend(); ++it)
          if (protocol::matches_any(request.filters, *it))
            result.events.push_back(protocol::render_event_json(*it));
        self->send(request.reply_to, history_atom_v, request.subscription_id, request.generation,
                   result);
      }
      store->held_queries.clear();
    },
    [=](count_atom, const history_request& request) {
      // As the reader's SQL does: the rooms hidden from the reader are left out.
      auto unseen = [&](const protocol::event& ev) {
        auto state = protocol::is_group_metadata_kind(ev.kind);
        auto names = [&](const std::vector<std::string>& rooms) {
          for (const auto& tag : ev.tags)
            if (tag.size() > 1 && tag[0] == "h"
                && std::find(rooms.begin(), rooms.end(), tag[1]) != rooms.end())
              return true;
          return false;
        };
        return names(request.hidden.unseen) || (!state && names(request.hidden.state_only));
      };
      ++store->count_calls;
      std::uint64_t n = 0;
      for (const auto& ev : store->events)
        n += protocol::matches_any(request.filters, ev) && !unseen(ev);
      self->send(request.reply_to, counted_atom_v, request.subscription_id, request.generation,
                 storage::count_result{true, n, {}, false, store->count_read_at});
    },
  };
}

inline const auto alice = protocol::key_pair::generate();
inline const auto bob = protocol::key_pair::generate();

struct fixture : comb::test::test_system {
  std::shared_ptr<fake_store> store = std::make_shared<fake_store>();
  std::shared_ptr<relay_metrics> metrics = std::make_shared<relay_metrics>();
  caf::actor storage_actor;
  caf::actor fanout;
  std::uint64_t next_owner = 1;

  fixture() {
    storage_actor = system->spawn(fake_storage, store);
    fanout = system->spawn(fanout_actor, fanout_args{{storage_actor}, metrics, nullptr});
    store->fanout = fanout;
    spawned = {storage_actor, fanout};
  }

  ~fixture() {
    // The system waits for every actor at destruction, so all of them are told to exit first.
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  std::vector<caf::actor> spawned;
  /// The community actor the connections `connect` opens ask for membership changes (none
  /// unless a test sets one: membership is unavailable then).
  caf::actor community;
  /// The membership writer the connections `connect` opens ask for invites (none unless set).
  caf::actor membership_writer;
  /// Bounds of the connections `connect` opens (community, host and limits are set there).
  connection_policy base_policy;
  /// The pod's reader queues, as the connections `connect` opens see them (none unless set).
  std::shared_ptr<reader_waits> readers_waiting;
  /// How long the connections `connect` opens hold a reply read past their pod's state.
  double state_wait_seconds = max_state_wait_seconds;
  /// The pod's count of invite REQs waiting on the membership writer (none unless set).
  std::shared_ptr<std::atomic<std::size_t>> invites_waiting;

  struct client {
    caf::actor actor;
    std::shared_ptr<recording_sink> sink;
    std::string challenge;
  };

  client connect(bool closed_community = false, protocol::protocol_limits limits = {}) {
    client c{{}, std::make_shared<recording_sink>(), protocol::make_auth_challenge()};
    connection_args args;
    args.policy = base_policy;
    args.policy.community_id = 1;
    args.policy.host = "hive.test";
    args.policy.closed_community = closed_community;
    args.policy.limits = limits;
    args.challenge = c.challenge;
    args.sink = c.sink;
    args.owner = next_owner++;
    args.fanout = fanout;
    args.writer = storage_actor;
    args.readers = {storage_actor};
    args.readers_waiting = readers_waiting;
    args.invites_waiting = invites_waiting;
    args.metrics = metrics;
    args.community = community;
    args.membership_writer = membership_writer;
    args.state_wait_seconds = state_wait_seconds;
    c.actor = system->spawn(connection_actor, std::move(args));
    spawned.push_back(c.actor);
    run();
    REQUIRE(c.sink->take() == std::vector<std::string>{"[\"AUTH\",\"" + c.challenge + "\"]"});
    return c;
  }

  void say(const client& c, std::string frame) {
    caf::anon_send(c.actor, frame_atom_v, std::move(frame));
    run();
  }

  /// The community the connections `connect` opens has alice as its one member.
  void alice_the_only_member(bool closed) {
    base_policy.members = std::make_shared<member_cache>();
    (void)base_policy.members->replace({{alice.public_key(), storage::member_role::member}});
    base_policy.members->set_closed(closed);
  }

  /// Sends the AUTH a client would send for `who` to the challenge `c` was given; returns it so
  /// the test can check its OK.
  protocol::event authenticate(const client& c, const protocol::key_pair& who) {
    auto auth = test::sign_event(who, 22242, "", {{"relay", "wss://hive.test"}, {"challenge", c.challenge}});
    say(c, "[\"AUTH\"," + protocol::render_event_json(auth) + "]");
    return auth;
  }

  void release_history() {
    caf::anon_send(storage_actor, release_atom::value);
    run();
  }

  void run() { scheduler->run(); }
};

inline std::string ok_frame(const protocol::event& ev, bool accepted, const std::string& message) {
  return protocol::render_ok(ev.id, accepted, message);
}

inline std::string event_on(const std::string& sub, const protocol::event& ev) {
  return protocol::render_event_frame(sub, protocol::render_event_json(ev));
}


} // namespace comb::test_connection
