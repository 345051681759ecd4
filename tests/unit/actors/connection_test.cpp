// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "actors/connection/connection.hpp"
#include "actors/community/member_cache.hpp"
#include "actors/connection/rate_limiter.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/relay_message.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using comb::actors::connection;
using comb::actors::connection_policy;
using comb::actors::live_event;

namespace {

const auto author = protocol::key_pair::generate();

live_event live(const protocol::event& ev) {
  return {std::make_shared<const protocol::event>(ev),
          std::make_shared<const std::string>(protocol::render_event_json(ev))};
}

} // namespace

TEST_CASE("the token bucket allows a burst, then the sustained rate", "[actors][rate]") {
  actors::rate_limiter limiter(2, 3);
  CHECK(limiter.try_take(10.0));
  CHECK(limiter.try_take(10.0));
  CHECK(limiter.try_take(10.0));
  CHECK_FALSE(limiter.try_take(10.0));
  CHECK(limiter.try_take(10.5));
  CHECK_FALSE(limiter.try_take(10.5));
  CHECK(limiter.try_take(100.0));
}

TEST_CASE("events over the rate are refused with rate-limited", "[actors][connection]") {
  connection_policy policy;
  policy.event_rate = 1;
  policy.event_burst = 2;
  connection c(policy, "challenge");
  auto ev = test::sign_event(author, 1);
  CHECK_FALSE(c.admit_event(ev, test::unix_now(), 5.0));
  CHECK_FALSE(c.admit_event(ev, test::unix_now(), 5.0));
  CHECK(c.admit_event(ev, test::unix_now(), 5.0)->text() == "rate-limited: slow down, too many events");
  CHECK_FALSE(c.admit_event(ev, test::unix_now(), 6.0));
}

TEST_CASE("expired, future and in-flight-bound events are refused", "[actors][connection]") {
  connection_policy policy;
  policy.max_events_in_flight = 1;
  connection c(policy, "challenge");
  auto now = test::unix_now();
  auto expired = test::sign_event(author, 1, "x", {{"expiration", std::to_string(now - 1)}});
  CHECK(c.admit_event(expired, now, 1)->text() == "invalid: event has already expired");
  auto future = test::sign_event(author, 1, "x", {}, now + 3600);
  CHECK(c.admit_event(future, now, 1)->text() == "invalid: created_at is too far in the future");
  auto fine = test::sign_event(author, 1);
  CHECK_FALSE(c.admit_event(fine, now, 1));
  c.event_sent();
  CHECK(c.admit_event(fine, now, 1)->text() == "rate-limited: too many events awaiting storage");
  c.event_answered();
  CHECK_FALSE(c.admit_event(fine, now, 1));
}

TEST_CASE("an event's indexed tags cost frame tokens beyond its bytes", "[actors][connection]") {
  std::vector<protocol::tag> tags;
  for (int i = 0; i < 100; ++i)
    tags.push_back({"p", std::to_string(i)});
  tags.push_back({"alt", "not indexed"});
  tags.push_back({"t"}); // no value: no row
  CHECK(actors::tag_rows_cost(test::sign_event(author, 1, "x", tags)) == 100 / actors::indexed_tags_per_token);
  CHECK(actors::tag_rows_cost(test::sign_event(author, 1)) == 0);
}

TEST_CASE("history frames, EOSE, then held live events not already sent", "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  auto in_both = test::sign_event(author, 1, "both");
  auto live_only = test::sign_event(author, 1, "live");
  CHECK_FALSE(c.live_arrived("s", generation, live(in_both)));
  CHECK_FALSE(c.live_arrived("s", generation, live(live_only)));
  auto frames = c.history_arrived("s", generation, {protocol::render_event_json(in_both)});
  CHECK(frames
        == std::vector<std::string>{
          protocol::render_event_frame("s", protocol::render_event_json(in_both)),
          protocol::render_eose("s"),
          protocol::render_event_frame("s", protocol::render_event_json(live_only))});
  auto after_eose = c.live_arrived("s", generation, live(live_only));
  REQUIRE(after_eose);
  CHECK(after_eose->flattened() == protocol::render_event_frame("s", protocol::render_event_json(live_only)));
}

TEST_CASE("a profile written twice while history was read is sent after EOSE only as its newest",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  const auto now = test::unix_now();
  auto first = test::sign_event(author, 0, R"({"name":"first"})", {}, now - 10);
  auto second = test::sign_event(author, 0, R"({"name":"second"})", {}, now - 5);
  auto note = test::sign_event(author, 1, "a note");
  CHECK_FALSE(c.live_arrived("s", generation, live(first)));
  CHECK_FALSE(c.live_arrived("s", generation, live(second)));
  CHECK_FALSE(c.live_arrived("s", generation, live(note)));
  // The history read the newest; the older one must not follow it as if it were current.
  CHECK(c.history_arrived("s", generation, {protocol::render_event_json(second)})
        == std::vector<std::string>{protocol::render_event_frame("s", protocol::render_event_json(second)),
                                    protocol::render_eose("s"),
                                    protocol::render_event_frame("s", protocol::render_event_json(note))});
}

TEST_CASE("a live event held for EOSE is not sent once its expiration passed meanwhile", "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  const auto now = test::unix_now();
  auto lapsing = test::sign_event(author, 1, "lapsing", {{"expiration", std::to_string(now)}});
  auto lasting = test::sign_event(author, 1, "lasting", {{"expiration", std::to_string(now + 3600)}});
  CHECK_FALSE(c.live_arrived("s", generation, live(lapsing)));
  CHECK_FALSE(c.live_arrived("s", generation, live(lasting)));
  CHECK(c.history_arrived("s", generation, {})
        == std::vector<std::string>{protocol::render_eose("s"),
                                    protocol::render_event_frame("s", protocol::render_event_json(lasting))});
}

TEST_CASE("live events past the held bound before EOSE are dropped and counted", "[actors][connection][bounds]") {
  connection_policy policy;
  policy.max_buffered_live = 2;
  connection c(policy, "challenge");
  auto generation = c.open_subscription("s").value();
  std::vector<protocol::event> arrived;
  for (int i = 0; i < 3; ++i) {
    arrived.push_back(test::sign_event(author, 1, "live " + std::to_string(i)));
    CHECK_FALSE(c.live_arrived("s", generation, live(arrived.back())));
  }
  CHECK(c.take_dropped_live() == 1);
  CHECK(c.take_dropped_live() == 0);
  // Every event up to the bound, in order: the newest was the one dropped.
  CHECK(c.history_arrived("s", generation, {})
        == std::vector<std::string>{protocol::render_eose("s"),
                                    protocol::render_event_frame("s", protocol::render_event_json(arrived[0])),
                                    protocol::render_event_frame("s", protocol::render_event_json(arrived[1]))});
}

TEST_CASE("live events held before EOSE are bounded over the whole connection, and freed by EOSE, CLOSE and replacement",
          "[actors][connection][bounds]") {
  connection_policy policy;
  policy.max_buffered_live = 3;
  policy.max_buffered_live_per_connection = 4;
  connection c(policy, "challenge");
  std::vector<std::uint64_t> generations;
  for (const char* id : {"a", "b", "c"})
    generations.push_back(c.open_subscription(id).value());
  auto offer = [&](const std::string& content) {
    auto ev = live(test::sign_event(author, 1, content));
    for (std::size_t i = 0; i < 3; ++i)
      (void)c.live_arrived(std::string(1, static_cast<char>('a' + i)), generations[i], ev);
  };
  offer("one");
  CHECK(c.take_dropped_live() == 0); // three held, one each
  offer("two");
  CHECK(c.take_dropped_live() == 2); // a holds two; the connection's four are reached
  CHECK(c.history_arrived("b", generations[1], {}).size() == 2); // EOSE and "one"
  CHECK(c.close_subscription("c"));
  generations[2] = c.open_subscription("c").value();
  // b's EOSE and c's CLOSE gave back two: a and the new c may hold two more, not three.
  offer("three");
  CHECK(c.take_dropped_live() == 0); // b is live now: its event went out
  offer("four");
  CHECK(c.take_dropped_live() == 2);
  // a held "one", "two", "three": replacing it gives its three back.
  generations[0] = c.open_subscription("a").value();
  offer("five");
  offer("six");
  // c dropped since "four" (no gap until its EOSE); the new a holds both.
  CHECK(c.take_dropped_live() == 2);
  CHECK(c.history_arrived("a", generations[0], {}).size() == 3);
}

TEST_CASE("live events held before EOSE are bounded in bytes too, per subscription", "[actors][connection][bounds]") {
  connection_policy policy;
  const std::string large(64 * 1024, 'x');
  auto big = test::sign_event(author, 1, large);
  const auto size = protocol::render_event_json(big).size();
  policy.max_buffered_live_bytes = 2 * size + 512; // two of these, a digit longer each, and room for a small one
  connection c(policy, "challenge");
  auto generation = c.open_subscription("s").value();
  auto other = c.open_subscription("t").value();
  for (int i = 0; i < 3; ++i)
    CHECK_FALSE(c.live_arrived("s", generation, live(test::sign_event(author, 1, large + std::to_string(i)))));
  CHECK(c.take_dropped_live() == 1);
  // A small one that would fit is dropped too: the client gets a prefix, not a gap.
  CHECK_FALSE(c.live_arrived("s", generation, live(test::sign_event(author, 1, "small"))));
  CHECK(c.take_dropped_live() == 1);
  CHECK_FALSE(c.live_arrived("t", other, live(big))); // its own bytes
  CHECK(c.take_dropped_live() == 0);
  CHECK(c.history_arrived("s", generation, {}).size() == 3); // EOSE and the two held
}

TEST_CASE("history in chunks: events of each, EOSE and held live events after the last only",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  auto newest = test::sign_event(author, 1, "newest");
  auto older = test::sign_event(author, 1, "older");
  auto live_meanwhile = test::sign_event(author, 1, "live");
  auto frame = [](const protocol::event& ev) {
    return protocol::render_event_frame("s", protocol::render_event_json(ev));
  };
  CHECK(c.history_arrived("s", generation, {protocol::render_event_json(newest)}, 1.0, false)
        == std::vector<std::string>{frame(newest)});
  // Still reading history: a live event is held, even one already sent in a chunk.
  CHECK_FALSE(c.live_arrived("s", generation, live(live_meanwhile)));
  CHECK_FALSE(c.live_arrived("s", generation, live(newest)));
  CHECK(c.history_arrived("s", generation, {protocol::render_event_json(older)}, 1.0)
        == std::vector<std::string>{frame(older), protocol::render_eose("s"), frame(live_meanwhile)});
  // A reply that arrives after EOSE (none should) is dropped rather than sent after it.
  CHECK(c.history_arrived("s", generation, {protocol::render_event_json(older)}, 1.0).empty());
}

TEST_CASE("a history reply for a replaced subscription is dropped", "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto first = c.open_subscription("s").value();
  auto second = c.open_subscription("s").value();
  CHECK(first != second);
  CHECK(c.history_arrived("s", first, {}).empty());
  CHECK(c.history_arrived("s", second, {}) == std::vector<std::string>{protocol::render_eose("s")});
  CHECK(c.close_subscription("s"));
  CHECK_FALSE(c.close_subscription("s"));
  CHECK_FALSE(c.live_arrived("s", second, live(test::sign_event(author, 1))));
}

TEST_CASE("a live event matched under a replaced subscription's filters is dropped",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto first = c.open_subscription("s").value();
  auto second = c.open_subscription("s").value();
  // Matched by the fan-out against the first REQ's filters, delivered after the second REQ.
  CHECK_FALSE(c.live_arrived("s", first, live(test::sign_event(author, 1))));
  CHECK(c.history_arrived("s", second, {}) == std::vector<std::string>{protocol::render_eose("s")});
  CHECK_FALSE(c.live_arrived("s", first, live(test::sign_event(author, 1))));
  CHECK(c.live_arrived("s", second, live(test::sign_event(author, 1))).has_value());
}

TEST_CASE("history JSON shared by the reader is framed around the same string, its ids remembered",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s\"1").value();
  auto stored = test::sign_event(author, 1, "stored");
  auto held = test::sign_event(author, 1, "held");
  CHECK_FALSE(c.live_arrived("s\"1", generation, live(stored), 10.0));
  CHECK_FALSE(c.live_arrived("s\"1", generation, live(held), 10.0));
  auto json = std::make_shared<const std::string>(protocol::render_event_json(stored));
  auto reply = c.history_reply("s\"1", generation, {json, nullptr}, 10.0, true);
  // The stored event framed around the reader's string itself (no copy), the missing body
  // dropped; then EOSE, and of the held events only the one history did not send.
  REQUIRE(reply.events.size() == 1);
  CHECK(reply.events[0].json.get() == json.get());
  CHECK(*reply.events[0].head == protocol::event_frame_prefix("s\"1"));
  CHECK(reply.events[0].flattened() == protocol::render_event_frame("s\"1", *json));
  CHECK(reply.closing
        == std::vector<std::string>{
          protocol::render_eose("s\"1"),
          protocol::render_event_frame("s\"1", protocol::render_event_json(held))});
  CHECK_FALSE(c.live_arrived("s\"1", generation, live(stored), 11.0));
}

TEST_CASE("a history event that reaches the fan-out after EOSE is not sent again",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  auto committed_before_query = test::sign_event(author, 1, "late publish");
  CHECK(c.history_arrived("s", generation, {protocol::render_event_json(committed_before_query)}, 100.0).size() == 2);
  CHECK_FALSE(c.live_arrived("s", generation, live(committed_before_query), 101.0));
  auto fresh = test::sign_event(author, 1, "fresh");
  CHECK(c.live_arrived("s", generation, live(fresh), 101.0).has_value());
  // Past the window the remembered ids are let go.
  CHECK(c.live_arrived("s", generation, live(committed_before_query), 100.0 + actors::history_echo_window + 1).has_value());
}

TEST_CASE("a banned author, sender or event id is refused with blocked", "[actors][connection]") {
  connection_policy policy;
  policy.bans = std::make_shared<actors::ban_list>();
  connection c(policy, "challenge");
  auto now = test::unix_now();
  auto post = test::sign_event(author, 1, "post");
  CHECK_FALSE(c.admit_event(post, now, 1));

  policy.bans->set_event(post.id, true, 0);
  CHECK(c.admit_event(post, now, 1)->text() == "blocked: this event is banned from this community");
  policy.bans->set_event(post.id, false, 0);
  CHECK_FALSE(c.admit_event(post, now, 1));

  policy.bans->set_pubkey(author.public_key(), true, 0);
  CHECK(c.admit_event(post, now, 1)->text() == "blocked: you are banned from this community");
  auto join = test::sign_event(author, 28934, "", {{"-"}});
  CHECK(c.admit_event(join, now, 1)->text() == "blocked: you are banned from this community");

  // Loading the stored bans replaces what was there.
  storage::community_bans stored;
  stored.events.push_back({post.id, "spam"});
  policy.bans->replace(stored, 0);
  CHECK(c.admit_event(post, now, 1)->text() == "blocked: this event is banned from this community");
  CHECK_FALSE(policy.bans->is_banned_pubkey(author.public_key()));
}

TEST_CASE("a request to vanish naming this relay is admitted whatever its author's standing",
          "[actors][connection][nip62]") {
  auto members = std::make_shared<comb::actors::member_cache>();
  (void)members->replace({});
  members->set_closed(true);
  connection_policy policy;
  policy.host = "hive.test";
  policy.closed_community = true;
  policy.members = members;
  policy.bans = std::make_shared<actors::ban_list>();
  policy.bans->set_pubkey(author.public_key(), true, 0);
  policy.event_rate = 1;
  policy.event_burst = 2;
  connection c(policy, "challenge"); // not authenticated, not a member, banned
  auto now = test::unix_now();
  CHECK(c.admit_event(test::sign_event(author, 1, "hi"), now, 1)->text().starts_with("auth-required:"));
  // Flotilla's, and one naming this relay's address.
  CHECK_FALSE(c.admit_event(test::sign_event(author, 62, "", {{"relay", "ALL_RELAYS"}}), now, 1));
  CHECK_FALSE(c.admit_event(test::sign_event(author, 62, "", {{"relay", "wss://other.test"}, {"relay", "wss://hive.test/"}}),
                            now, 1));
  // The bound on events still counts it.
  CHECK(c.admit_event(test::sign_event(author, 62, "", {{"relay", "ALL_RELAYS"}}), now, 1)->text()
        == "rate-limited: slow down, too many events");
  connection fresh(policy, "challenge");
  CHECK(fresh.admit_event(test::sign_event(author, 62, "", {{"relay", "wss://other.test"}}), now, 1)->text()
        == "invalid: this request to vanish names other relays");
  CHECK(fresh.admit_event(test::sign_event(author, 62, "", {{"relay", "all_relays"}}), now, 2)->text()
        == "invalid: this request to vanish names other relays");
  CHECK(fresh.admit_event(test::sign_event(author, 62), now, 3)->text() == "invalid: a request to vanish needs a relay tag");
  auto forged = test::sign_event(author, 62, "", {{"relay", "ALL_RELAYS"}});
  forged.content = "changed";
  CHECK(fresh.admit_event(forged, now, 4)->text().starts_with("invalid: "));
}

TEST_CASE("requests to vanish take from the pod's budget, over all its connections",
          "[actors][connection][nip62][bounds]") {
  connection_policy policy;
  policy.host = "hive.test";
  policy.vanish_requests = std::make_shared<actors::shared_rate_limiter>(1, 2);
  connection first(policy, "challenge"), second(policy, "challenge");
  auto now = test::unix_now();
  auto request = [&](const protocol::key_pair& who) {
    return test::sign_event(who, 62, "", {{"relay", "ALL_RELAYS"}});
  };
  // A forged request takes nothing from the budget.
  auto forged = request(author);
  forged.content = "changed";
  CHECK(first.admit_event(forged, now, 10)->text().starts_with("invalid: "));
  CHECK_FALSE(first.admit_event(request(author), now, 10));
  CHECK_FALSE(second.admit_event(request(protocol::key_pair::generate()), now, 10));
  CHECK(second.admit_event(request(protocol::key_pair::generate()), now, 10)->text()
        == "rate-limited: too many requests to vanish on this relay; try again in a minute");
  CHECK_FALSE(first.admit_event(request(protocol::key_pair::generate()), now, 11));
}

TEST_CASE("a connection is authenticated as one key: the same again is fine, another is refused",
          "[actors][connection]") {
  connection_policy policy;
  policy.host = "hive.test";
  connection c(policy, "c1");
  auto as = [](const protocol::key_pair& who) {
    return test::sign_event(who, 22242, "", {{"relay", "ws://hive.test"}, {"challenge", "c1"}});
  };
  const auto other = protocol::key_pair::generate();
  REQUIRE_FALSE(c.authenticate(as(author), test::unix_now()));
  CHECK_FALSE(c.authenticate(as(author), test::unix_now()));
  auto refused = c.authenticate(as(other), test::unix_now());
  REQUIRE(refused);
  CHECK(refused->text()
        == "restricted: this connection is authenticated as another key; open another connection for this one");
  CHECK(c.authenticated() == author.public_key()); // its subscriptions are still the first key's
}

TEST_CASE("the database's access, kept in the member cache, beats the access at connect time",
          "[actors][connection]") {
  auto members = std::make_shared<comb::actors::member_cache>();
  (void)members->replace({{author.public_key(), storage::member_role::member}});
  connection_policy policy;
  policy.host = "hive.test";
  policy.closed_community = false; // open when the connections below opened
  policy.members = members;
  connection anonymous(policy, "c1");
  connection member(policy, "c2");
  auto auth = test::sign_event(author, 22242, "", {{"relay", "ws://hive.test"}, {"challenge", "c2"}});
  REQUIRE_FALSE(member.authenticate(auth, test::unix_now()));
  CHECK_FALSE(anonymous.may_read());
  CHECK_FALSE(anonymous.must_leave());

  connection arriving(policy, "c3"); // opened as the community closes, not yet authenticated
  REQUIRE(anonymous.open_subscription("feed"));
  members->set_closed(true); // the community was closed since
  CHECK(anonymous.closed_community());
  REQUIRE(anonymous.may_read());
  CHECK(anonymous.may_read()->text().starts_with("auth-required:"));
  CHECK(anonymous.must_leave());
  // The reader ends; a connection that reads nothing stays, to authenticate.
  CHECK(anonymous.ends_when_closed());
  CHECK(arriving.must_leave());
  CHECK_FALSE(arriving.ends_when_closed());
  CHECK_FALSE(member.must_leave());
  (void)members->replace({});
  CHECK(member.must_leave()); // and a member removed afterwards must leave too

  members->set_closed(false); // reopened: anyone reads again
  CHECK_FALSE(anonymous.may_read());
  CHECK_FALSE(anonymous.must_leave());
}

TEST_CASE("live events stop at once for a member the cache no longer holds, before the revocation",
          "[actors][connection]") {
  // The community actor replaces the cache, then its revocation travels through the fan-out:
  // an event matched meanwhile (from this pod or a bridge) must follow the cache, not the REQ.
  auto members = std::make_shared<comb::actors::member_cache>();
  (void)members->replace({{author.public_key(), storage::member_role::member}});
  members->set_closed(true);
  connection_policy policy;
  policy.host = "hive.test";
  policy.closed_community = true;
  policy.members = members;
  connection member(policy, "c1");
  auto auth = test::sign_event(author, 22242, "", {{"relay", "ws://hive.test"}, {"challenge", "c1"}});
  REQUIRE_FALSE(member.authenticate(auth, test::unix_now()));
  auto generation = member.open_subscription("s").value();
  auto held = test::sign_event(author, 1, "before EOSE");
  CHECK_FALSE(member.live_arrived("s", generation, live(held)));
  REQUIRE(member.history_arrived("s", generation, {}).size() == 2); // EOSE, the held event
  CHECK(member.live_arrived("s", generation, live(test::sign_event(author, 1, "a member"))));

  (void)members->replace({}); // removed; the revocation has not arrived yet
  CHECK_FALSE(member.live_arrived("s", generation, live(test::sign_event(author, 1, "after"))));

  SECTION("an open community's readers keep their events") {
    members->set_closed(false);
    CHECK(member.live_arrived("s", generation, live(test::sign_event(author, 1, "open again"))));
  }
}

TEST_CASE("every id of a reply in several chunks is recognized after EOSE, and only those",
          "[actors][connection]") {
  connection c(connection_policy{}, "challenge");
  auto generation = c.open_subscription("s").value();
  std::vector<protocol::event> sent;
  for (int chunk = 0; chunk < 3; ++chunk) {
    std::vector<std::string> rows;
    for (int i = 0; i < 40; ++i) {
      sent.push_back(test::sign_event(author, 1, "row " + std::to_string(chunk * 40 + i)));
      rows.push_back(protocol::render_event_json(sent.back()));
    }
    CHECK(c.history_arrived("s", generation, rows, 100.0, chunk == 2).size() == (chunk == 2 ? 41u : 40u));
  }
  CHECK(c.remembered_history_ids() == 120);
  for (const auto& ev : sent) // added out of order, looked up after the sort
    CHECK_FALSE(c.live_arrived("s", generation, live(ev), 101.0));
  for (int i = 0; i < 20; ++i)
    CHECK(c.live_arrived("s", generation, live(test::sign_event(author, 1, "fresh " + std::to_string(i))), 101.0));

  actors::history_ids ids;
  CHECK_FALSE(ids.add("{\"pubkey\":\"" + std::string(64, 'a') + "\"}")); // no id where comb puts it
  CHECK_FALSE(ids.add("{\"id\":\"abc\"}"));
  CHECK(ids.empty());
  // Ids that share their first 8 characters are told apart by the rest.
  auto id_with = [](std::uint8_t last) {
    protocol::bytes32 id{};
    id.fill(0xaa);
    id[31] = last;
    return id;
  };
  for (std::uint8_t last : {7, 3, 9})
    CHECK(ids.add("{\"id\":\"" + protocol::to_hex(id_with(last)) + "\",\"pubkey\":\"\"}"));
  ids.seal();
  CHECK(ids.contains(id_with(3)));
  CHECK(ids.contains(id_with(7)));
  CHECK(ids.contains(id_with(9)));
  CHECK_FALSE(ids.contains(id_with(5)));
  CHECK_FALSE(ids.contains(protocol::bytes32{}));
}
