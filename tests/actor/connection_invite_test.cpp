// SPDX-License-Identifier: MIT
// Invite REQs (NIP-43 28935): who the connection lets ask the pod's one membership writer, and
// what one client, or all of them, may have waiting there (fixture: connection_fixture.hpp).
#include <catch2/catch.hpp>

#include "connection_fixture.hpp"

using namespace comb;
using namespace comb::actors;
using namespace comb::test_connection;

namespace {

/// Stands in for the membership writer: records each mint it is asked for, answers none, and
/// holds each one's place among the pod's until it is answered (as the writer's mailbox does).
struct mint_asked {
  std::uint64_t ticket = 0;
  caf::actor from;
  waiting_place_ptr place;
};

caf::behavior recording_writer(caf::event_based_actor* self, std::shared_ptr<std::vector<mint_asked>> asked) {
  return {
    [=](mint_atom, std::uint64_t ticket, std::int64_t, const protocol::bytes32&, const waiting_place_ptr& place) {
      asked->push_back({ticket, caf::actor_cast<caf::actor>(self->current_sender()), place});
    },
  };
}

const std::string invite_req = R"(["REQ","inv",{"kinds":[28935]}])";

std::string invite_req_named(const std::string& id) {
  return R"(["REQ",")" + id + R"(",{"kinds":[28935]}])";
}

struct invite_fixture : fixture {
  std::shared_ptr<std::vector<mint_asked>> asked = std::make_shared<std::vector<mint_asked>>();

  invite_fixture() {
    membership_writer = system->spawn(recording_writer, asked);
    spawned.push_back(membership_writer);
    base_policy.members = std::make_shared<member_cache>();
    (void)base_policy.members->replace({{alice.public_key(), storage::member_role::member},
                                        {bob.public_key(), storage::member_role::admin}});
    base_policy.members->set_closed(false);
  }

  client member(const protocol::key_pair& who) {
    auto c = connect(false);
    auto auth = authenticate(c, who);
    REQUIRE(c.sink->take() == std::vector<std::string>{ok_frame(auth, true, "")});
    return c;
  }

  void answer(mint_asked& mint) {
    invite_reply reply;
    reply.refusal = "restricted: you may not create invites in this community";
    mint.place.reset();
    caf::anon_send(mint.from, minted_atom_v, mint.ticket, reply);
    run();
  }
};

} // namespace

TEST_CASE_METHOD(invite_fixture, "an invite REQ from one the cache says may not invite never reaches the writer",
                 "[actor][connection][invites]") {
  auto c = member(alice);
  say(c, invite_req);
  CHECK(c.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("inv", "restricted: you may not create invites in this community")});
  CHECK(asked->empty());
  // The community lets members invite (the database said so): the writer decides.
  base_policy.members->set_members_may_invite(true);
  say(c, invite_req);
  CHECK(asked->size() == 1);
  // An admin always may.
  base_policy.members->set_members_may_invite(false);
  auto admin = member(bob);
  say(admin, invite_req);
  CHECK(asked->size() == 2);
}

TEST_CASE_METHOD(invite_fixture, "an invite REQ waiting for its mint is held within the connection's bounds",
                 "[actor][connection][invites][bounds]") {
  base_policy.max_filter_values = 10;
  auto admin = member(bob);
  std::string values;
  for (int i = 0; i < 20; ++i)
    values += (values.empty() ? "\"" : ",\"") + std::to_string(i) + "\"";
  say(admin, R"(["REQ","big",{"kinds":[28935]},{"#t":[)" + values + "]}]");
  CHECK(admin.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("big", "rate-limited: too many filter values open on this connection (at most 10)")});
  CHECK(asked->empty());
  // Each waiting one counts as open: five values wait, six more do not fit.
  say(admin, R"(["REQ","a",{"kinds":[28935]},{"#t":["1","2","3","4"]}])");
  CHECK(asked->size() == 1);
  say(admin, R"(["REQ","b",{"kinds":[28935]},{"#t":["1","2","3","4","5"]}])");
  CHECK(admin.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("b", "rate-limited: too many filter values open on this connection (at most 10)")});
  CHECK(asked->size() == 1);
}

TEST_CASE_METHOD(invite_fixture, "closing an invite REQ does not give back its place while its mint waits",
                 "[actor][connection][invites][bounds]") {
  auto admin = member(bob);
  const std::size_t bound = base_policy.max_queries_in_flight;
  for (std::size_t i = 0; i < bound; ++i) {
    say(admin, invite_req_named("i" + std::to_string(i)));
    say(admin, R"(["CLOSE","i)" + std::to_string(i) + R"("])");
  }
  CHECK(asked->size() == bound);
  (void)admin.sink->take();
  say(admin, invite_req);
  CHECK(admin.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("inv", "rate-limited: too many invite requests awaiting an answer")});
  CHECK(asked->size() == bound);
  // Answered, a closed one's place is free again, and its answer goes nowhere.
  answer(asked->front());
  CHECK(admin.sink->take().empty());
  say(admin, invite_req);
  CHECK(asked->size() == bound + 1);
}

TEST_CASE_METHOD(invite_fixture, "the pod has a bounded number of invite REQs waiting on its membership writer",
                 "[actor][connection][invites][bounds]") {
  invites_waiting = std::make_shared<std::atomic<std::size_t>>(max_waiting_invites - 1);
  auto admin = member(bob);
  auto other = member(bob);
  say(admin, invite_req);
  CHECK(asked->size() == 1);
  CHECK(*invites_waiting == max_waiting_invites);
  say(other, invite_req);
  CHECK(other.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("inv", "rate-limited: too many invite requests are waiting; retry shortly")});
  CHECK(asked->size() == 1);
  // An answer gives its place back.
  answer(asked->front());
  CHECK(*invites_waiting == max_waiting_invites - 1);
  say(other, invite_req);
  CHECK(asked->size() == 2);
  CHECK(*invites_waiting == max_waiting_invites);
  // A connection that ends with one waiting does not: its mint still waits on the writer (a
  // client closing its sockets at once would otherwise queue mints there without a bound).
  caf::anon_send_exit(other.actor, caf::exit_reason::user_shutdown);
  run();
  CHECK(*invites_waiting == max_waiting_invites);
  (void)admin.sink->take(); // the first one's refusal
  say(admin, invite_req_named("again"));
  CHECK(admin.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("again", "rate-limited: too many invite requests are waiting; retry shortly")});
  CHECK(asked->size() == 2);
  // The writer handled it (its answer went nowhere): the place is free.
  answer(asked->back());
  CHECK(*invites_waiting == max_waiting_invites - 1);
  say(admin, invite_req_named("again"));
  CHECK(asked->size() == 3);
}

TEST_CASE_METHOD(invite_fixture, "an invite REQ replaces the subscription of its id, refused or not",
                 "[actor][connection][invites]") {
  auto c = member(alice);
  auto writer = connect();
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  release_history();
  REQUIRE(c.sink->take() == std::vector<std::string>{R"(["EOSE","s"])"});
  // Refused (alice may not invite): CLOSED means the kind-1 subscription "s" ended too.
  say(c, invite_req_named("s"));
  CHECK(c.sink->take()
        == std::vector<std::string>{
          protocol::render_closed("s", "restricted: you may not create invites in this community")});
  auto note = test::sign_event(bob, 1, "after the CLOSED");
  say(writer, test::event_frame(note));
  CHECK(writer.sink->take() == std::vector<std::string>{ok_frame(note, true, "")});
  CHECK(c.sink->take().empty());
  // Waiting for its mint: the old filters deliver nothing under "s" meanwhile.
  say(c, R"(["REQ","s",{"kinds":[1]}])");
  release_history();
  REQUIRE(c.sink->take() == std::vector<std::string>{event_on("s", note), R"(["EOSE","s"])"});
  base_policy.members->set_members_may_invite(true);
  say(c, invite_req_named("s"));
  REQUIRE(asked->size() == 1);
  auto later = test::sign_event(bob, 1, "while the mint waits");
  say(writer, test::event_frame(later));
  CHECK(c.sink->take().empty());
}
