// SPDX-License-Identifier: MIT
// The connection's NIP-29 checks against a pod's room cache: unknown rooms, late events,
// restricted writes, private and hidden reads, invite codes, relay-only room state.
#include <catch2/catch.hpp>

#include "actors/community/room_requests.hpp"
#include "actors/connection/connection.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/room.hpp"
#include "protocol/relay_message.hpp"
#include "support/signed_events.hpp"

using namespace comb;
using actors::connection;
using actors::connection_policy;

namespace {

const auto member = protocol::key_pair::generate();
const auto outsider = protocol::key_pair::generate();
const auto admin = protocol::key_pair::generate();

protocol::room_state room(std::string id, protocol::room_flags flags) {
  protocol::room_state r;
  r.exists = true;
  r.id = std::move(id);
  r.meta.flags = flags;
  r.members = {{member.public_key(), {}}};
  return r;
}

connection_policy policy_with_rooms() {
  connection_policy policy;
  policy.members = std::make_shared<actors::member_cache>();
  (void)policy.members->replace({{admin.public_key(), storage::member_role::admin}});
  policy.members->set_rooms(std::make_shared<const actors::room_index>(std::vector{
                              room("open", {}), room("locked", {true, true, false, false}),
                              room("ghost", {true, false, true, false})}),
                            1);
  return policy;
}

protocol::event chat(const protocol::key_pair& who, const std::string& h, std::int64_t at = 0) {
  return test::sign_event(who, 9, "hi", {{"h", h}}, at);
}

/// A live event as the fan-out hands it out, with the rooms the writer said it borrows.
actors::live_event live_of(const protocol::event& ev,
                           std::shared_ptr<const std::vector<std::string>> borrowed_rooms = nullptr) {
  return actors::live_event{std::make_shared<const protocol::event>(ev),
                            std::make_shared<const std::string>(protocol::render_event_json(ev)),
                            std::move(borrowed_rooms)};
}

connection authed_as(const protocol::key_pair& who, const connection_policy& policy) {
  connection c(policy, "challenge");
  auto auth = test::sign_event(who, 22242, "", {{"relay", "ws://" + policy.host}, {"challenge", "challenge"}});
  REQUIRE_FALSE(c.authenticate(auth, test::unix_now()));
  return c;
}

} // namespace

TEST_CASE("room requests come only from a connection authenticated as their author", "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto now = test::unix_now();
  // An admin's removal of someone not in the room yet is refused and not stored: a copy sent
  // later by anyone else, once they joined, must not remove them.
  auto removal = test::sign_event(admin, 9001, "", {{"h", "open"}, {"p", protocol::to_hex(member.public_key())}});
  connection anonymous(policy, "challenge");
  CHECK(anonymous.admit_event(removal, now, 1)->text()
        == "auth-required: authenticate as the author to send this request");
  auto someone_else = authed_as(outsider, policy);
  CHECK(someone_else.admit_event(removal, now, 2)->text()
        == "restricted: this request may only be sent by its author");
  CHECK(someone_else.admit_event(test::sign_event(member, 9022, "", {{"h", "open"}}), now, 3)->text()
        == "restricted: this request may only be sent by its author");
  CHECK_FALSE(authed_as(admin, policy).admit_event(removal, now, 4));
}

TEST_CASE("posts to rooms: unknown rooms, late events and restricted rooms are refused",
          "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  connection c(policy, "challenge");
  auto now = test::unix_now();
  CHECK_FALSE(c.admit_event(chat(outsider, "open"), now, 1));
  CHECK_FALSE(c.admit_event(chat(outsider, "_"), now, 1)); // Flotilla's general chat
  CHECK(c.admit_event(chat(outsider, "nowhere"), now, 2)->text()
        == "invalid: there is no room \"nowhere\" in this community");
  CHECK(c.admit_event(chat(member, "open", now - 901), now, 3)->text().starts_with("invalid: room events"));
  CHECK(c.admit_event(chat(outsider, "locked"), now, 4)->text()
        == "restricted: only members of this room may post in it");
  CHECK_FALSE(c.admit_event(chat(member, "locked"), now, 5));
  CHECK_FALSE(c.admit_event(chat(admin, "locked"), now, 6));
  // Every h counts, not the first only: a restricted or unknown room further on refuses too.
  CHECK(c.admit_event(test::sign_event(outsider, 9, "hi", {{"h", "open"}, {"h", "locked"}}), now, 20)->text()
        == "restricted: only members of this room may post in it");
  CHECK(c.admit_event(test::sign_event(outsider, 9, "hi", {{"h", "open"}, {"h", "nowhere"}}), now, 21)->text()
        == "invalid: there is no room \"nowhere\" in this community");
  // Each delivery reads an event's rooms: at most 16 h tags, even of the general chat.
  std::vector<protocol::tag> many(17, protocol::tag{"h", "_"});
  CHECK(c.admit_event(test::sign_event(outsider, 9, "hi", many), now, 22)->text()
        == "invalid: an event names at most 16 rooms (h tags)");
  many.pop_back();
  CHECK_FALSE(c.admit_event(test::sign_event(outsider, 9, "hi", many), now, 23));
  CHECK_FALSE(c.admit_event(test::sign_event(member, 9, "hi", {{"h", "open"}, {"h", "locked"}}), now, 22));
  // A create names a room that does not exist yet; room requests are judged in their
  // transaction, and come only from a connection authenticated as their author.
  auto outsiders = authed_as(outsider, policy);
  CHECK_FALSE(outsiders.admit_event(test::sign_event(outsider, 9007, "", {{"h", "new-room"}}), now, 7));
  CHECK_FALSE(outsiders.admit_event(test::sign_event(outsider, 9021, "", {{"h", "locked"}}), now, 8));
  for (std::uint32_t kind : {39000u, 39001u, 39002u, 39003u, 39005u})
    CHECK(c.admit_event(test::sign_event(admin, kind, "", {{"d", "open"}}), now, 9 + kind % 10)->text()
          == "restricted: only the relay may publish kind " + std::to_string(kind));
}

TEST_CASE("a hidden room is, to whoever it is hidden from, a room that does not exist", "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto now = test::unix_now();
  std::uint64_t n = 0;
  // What `who` hears for an event of `kind` naming `room`: the early reply, as text (OK true or
  // false: room_reply_for), or "" when it goes on to its transaction.
  auto answer = [&](const protocol::key_pair& who, std::uint32_t kind, const std::string& h,
                    std::vector<protocol::tag> more = {}) -> std::string {
    auto c = authed_as(who, policy);
    more.insert(more.begin(), protocol::tag{"h", h});
    auto ev = test::sign_event(who, kind, "", more, now);
    if (auto refused = c.admit_event(ev, now, ++n))
      return refused->text();
    if (!protocol::is_room_request_kind(kind))
      return "";
    auto request = protocol::parse_room_request(ev);
    if (!request)
      return request.error().text();
    auto early = c.refuse_room_request(request.value());
    if (!early)
      return "";
    auto reply = actors::room_reply_for(kind, *early);
    return (reply.accepted ? "true " : "false ") + reply.message;
  };
  auto as_nowhere = [&](const protocol::key_pair& who, std::uint32_t kind, std::vector<protocol::tag> more = {}) {
    auto ghost = answer(who, kind, "ghost", more);
    auto nowhere = answer(who, kind, "nowhere", more);
    if (auto at = nowhere.find("nowhere"); at != std::string::npos)
      nowhere.replace(at, 7, "ghost");
    return ghost == nowhere;
  };
  const auto someone = protocol::to_hex(member.public_key());
  for (std::uint32_t kind : {9u, 11u, 7u, 5u, 1111u})
    CHECK(as_nowhere(outsider, kind));
  CHECK(answer(outsider, 9, "ghost") == "invalid: there is no room \"ghost\" in this community");
  CHECK(answer(outsider, 5, "ghost").starts_with("invalid: ")); // a deletion too
  CHECK(as_nowhere(outsider, 9007));
  CHECK(answer(outsider, 9007, "ghost") == "false restricted: your role does not allow this in this room");
  for (std::uint32_t kind : {9000u, 9001u})
    CHECK(as_nowhere(outsider, kind, {{"p", someone}}));
  for (std::uint32_t kind : {9002u, 9008u, 9009u})
    CHECK(as_nowhere(outsider, kind));
  CHECK(answer(outsider, 9000, "ghost", {{"p", someone}}) == "false invalid: there is no such room in this community");
  // A join or a leave goes to its transaction either way, which answers both alike
  // (protocol::plan_room_change), by the same path and bounds; an open hidden room joins.
  for (std::uint32_t kind : {9021u, 9022u}) {
    CHECK(answer(outsider, kind, "nowhere").empty());
    CHECK(answer(outsider, kind, "ghost").empty());
  }
  CHECK(actors::room_reply_for(9022, protocol::room_outcome::no_such_room).message
        == actors::room_reply_for(9022, protocol::room_outcome::not_member).message);
  // Those it is not hidden from: its members and the community's admins.
  CHECK(answer(member, 9, "ghost").empty());
  CHECK(answer(admin, 9, "ghost").empty());
  CHECK(answer(admin, 9007, "ghost").empty()); // its transaction says the room exists
  CHECK(answer(member, 9007, "ghost") == "false duplicate: a room with this id already exists");
}

TEST_CASE("reads of rooms follow their flags", "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  connection anonymous(policy, "challenge");
  auto stranger = authed_as(outsider, policy);
  auto inside = authed_as(member, policy);
  auto manager = authed_as(admin, policy);
  CHECK(anonymous.rooms_visible({"open"}, 9));
  CHECK_FALSE(anonymous.rooms_visible({"locked"}, 9));
  CHECK(stranger.rooms_visible({"locked"}, 39000));
  CHECK(stranger.rooms_visible({"locked"}, 39002)); // who is in it: one who left reads it too
  CHECK_FALSE(stranger.rooms_visible({"locked"}, protocol::room_pins_kind));
  CHECK_FALSE(stranger.rooms_visible({"ghost"}, 39000));
  CHECK(inside.rooms_visible({"ghost"}, 9));
  CHECK_FALSE(inside.rooms_visible({"open"}, 9009));
  CHECK(manager.rooms_visible({"open"}, 9009));
  CHECK(manager.rooms_visible({"ghost"}, 39002));

  protocol::filter wants_locked;
  wants_locked.tags.push_back({'h', {"locked"}});
  CHECK(anonymous.check_room_filters({wants_locked})->text().starts_with("auth-required: "));
  // A room that does not exist gets the same answer: it tells nobody a hidden room's id exists.
  protocol::filter wants_ghost, wants_nothing, wants_open;
  wants_ghost.tags.push_back({'h', {"ghost"}});
  wants_nothing.tags.push_back({'h', {"no-such-room"}});
  wants_open.tags.push_back({'h', {"open", "_"}});
  auto nothing_answer = anonymous.check_room_filters({wants_nothing});
  REQUIRE(nothing_answer);
  CHECK(nothing_answer->text() == anonymous.check_room_filters({wants_ghost})->text());
  CHECK_FALSE(anonymous.check_room_filters({wants_open}));
  CHECK_FALSE(stranger.check_room_filters({wants_nothing}));
  // An authenticated stranger's subscription opens (its events are withheld one by one, below):
  // it is how Flotilla hears that it was let in.
  CHECK_FALSE(stranger.check_room_filters({wants_locked}));
  CHECK_FALSE(inside.check_room_filters({wants_locked}));

  // History and live delivery withhold what the reader may not see, and count it.
  auto locked_chat = chat(member, "locked");
  auto open_chat = chat(member, "open");
  REQUIRE(stranger.open_subscription("s").ok());
  auto frames = stranger.history_arrived("s", 1, {protocol::render_event_json(locked_chat),
                                                  protocol::render_event_json(open_chat)});
  CHECK(frames.size() == 2); // the open chat and EOSE
  CHECK(frames[0].find(protocol::to_hex(open_chat.id)) != std::string::npos);
  auto live = live_of(locked_chat);
  CHECK_FALSE(stranger.live_arrived("s", 1, live));
  CHECK(stranger.take_withheld() == 2);
  REQUIRE(inside.open_subscription("s").ok());
  (void)inside.history_arrived("s", 1, {});
  CHECK(inside.live_arrived("s", 1, live));
  // The same rule for history the reader shares as it holds it.
  auto t = stranger.open_subscription("t");
  REQUIRE(t.ok());
  auto shared = stranger.history_reply(
    "t", t.value(), {std::make_shared<const std::string>(protocol::render_event_json(locked_chat)),
             std::make_shared<const std::string>(protocol::render_event_json(open_chat))},
    0, true);
  REQUIRE(shared.events.size() == 1);
  CHECK(*shared.events[0].json == protocol::render_event_json(open_chat));
  CHECK(shared.closing == std::vector<std::string>{protocol::render_eose("t")});
  CHECK(stranger.take_withheld() == 1);
}

TEST_CASE("a deleted room's events still on their way show to nobody", "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto stranger = authed_as(outsider, policy);
  auto inside = authed_as(member, policy);
  auto locked_chat = chat(member, "locked");
  auto open_chat = chat(member, "open");
  REQUIRE(stranger.open_subscription("s").ok());
  REQUIRE(inside.open_subscription("s").ok());
  // Held for EOSE while "open" still stands.
  auto held = inside.open_subscription("h");
  REQUIRE(held.ok());
  auto open_live = live_of(open_chat);
  CHECK_FALSE(inside.live_arrived("h", held.value(), open_live));
  // "locked" and "open" are deleted (their events with them); a page read before, a bridged
  // copy and an event held for EOSE are late.
  auto before = policy.members->rooms();
  policy.members->set_rooms(std::make_shared<const actors::room_index>(
                              std::vector{room("ghost", {true, false, true, false})}, before.get()),
                            2);
  CHECK(inside.history_arrived("h", held.value(), {}) == std::vector<std::string>{protocol::render_eose("h")});
  // The deletion request itself names the room and shows: it is how clients learn of it.
  CHECK(stranger.rooms_visible({"locked"}, protocol::room_delete_kind));
  auto frames = stranger.history_arrived("s", 1, {protocol::render_event_json(locked_chat)});
  CHECK(frames == std::vector<std::string>{protocol::render_eose("s")});
  auto live = live_of(locked_chat);
  CHECK_FALSE(stranger.live_arrived("s", 1, live));
  (void)inside.history_arrived("s", 1, {});
  CHECK_FALSE(inside.live_arrived("s", 1, live)); // nobody: the room's events are gone
  // Asking for the deleted room is not refused: it finds nothing.
  protocol::filter wants_locked;
  wants_locked.tags.push_back({'h', {"locked"}});
  CHECK_FALSE(stranger.check_room_filters({wants_locked}));
  // Every room deleted: history rows are still read for rooms.
  policy.members->set_rooms(std::make_shared<const actors::room_index>(
                              std::vector<protocol::room_state>{}, policy.members->rooms().get()),
                            3);
  auto t = stranger.open_subscription("t");
  REQUIRE(t.ok());
  CHECK(stranger.history_arrived("t", t.value(), {protocol::render_event_json(locked_chat)})
        == std::vector<std::string>{protocol::render_eose("t")});
  // A room created again under the same id is a room again.
  policy.members->set_rooms(std::make_shared<const actors::room_index>(
                              std::vector{room("locked", {})}, policy.members->rooms().get()),
                            4);
  CHECK(stranger.rooms_visible({"locked"}, 9));
}

TEST_CASE("a live event naming a room this pod never held shows to nobody but its deletion",
          "[actors][rooms]") {
  // Created, posted to and deleted on another pod before this one loaded its rooms: the cache
  // never held "fleeting", and remembers no deletion of it either.
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto stranger = authed_as(outsider, policy);
  auto inside = authed_as(member, policy);
  auto community_admin = authed_as(admin, policy);
  auto fleeting = chat(member, "fleeting");
  auto deletion = test::sign_event(admin, protocol::room_delete_kind, "", {{"h", "fleeting"}});
  auto general = chat(member, std::string(protocol::general_room));
  for (auto* reader : {&stranger, &inside, &community_admin}) {
    REQUIRE(reader->open_subscription("s").ok());
    (void)reader->history_arrived("s", 1, {});
    CHECK_FALSE(reader->live_arrived("s", 1, live_of(fleeting)));
    CHECK(reader->live_arrived("s", 1, live_of(deletion)));
    CHECK(reader->live_arrived("s", 1, live_of(general)));
    CHECK(reader->live_arrived("s", 1, live_of(chat(member, "open"))));
  }
}

TEST_CASE("a live edit stored with the rooms of what it replaced shows only where they show",
          "[actors][rooms]") {
  // Flotilla edits a room's calendar event without its h; the writer stores the edit borrowing
  // the rooms of the version it replaced, and says so with the live event.
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto stranger = authed_as(outsider, policy);
  auto inside = authed_as(member, policy);
  auto edit = test::sign_event(member, 31923, "moved to noon", {{"d", "picnic"}});
  auto live = live_of(edit, std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"locked"}));
  auto metadata = test::sign_event(member, 0, "{}", {});
  auto profile = live_of(metadata);
  for (auto* reader : {&stranger, &inside}) {
    REQUIRE(reader->open_subscription("s").ok());
    (void)reader->history_arrived("s", 1, {});
    CHECK(reader->live_arrived("s", 1, profile));
  }
  CHECK_FALSE(stranger.live_arrived("s", 1, live));
  CHECK(inside.live_arrived("s", 1, live));
}

TEST_CASE("an event naming several rooms shows only where every one of them shows it",
          "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto stranger = authed_as(outsider, policy);
  auto inside = authed_as(member, policy);
  // The private room second: REQ history and live delivery read every h, not the first only.
  auto both = test::sign_event(member, 9, "hi", {{"h", "open"}, {"h", "locked"}});
  auto open_only = test::sign_event(member, 9, "hi", {{"h", "open"}});
  // A room this pod does not hold: one created on another pod and not read here yet, which may
  // be private (posting needs the room). Hidden in history as live.
  auto open_and_unknown = test::sign_event(member, 9, "hi", {{"h", "open"}, {"h", "nowhere"}});
  CHECK_FALSE(stranger.rooms_visible(protocol::rooms_of_event(both), 9));
  CHECK(inside.rooms_visible(protocol::rooms_of_event(both), 9));
  REQUIRE(stranger.open_subscription("s").ok());
  auto frames = stranger.history_arrived("s", 1, {protocol::render_event_json(both),
                                                  protocol::render_event_json(open_only),
                                                  protocol::render_event_json(open_and_unknown)});
  REQUIRE(frames.size() == 2); // open_only and EOSE
  CHECK(frames[0].find(protocol::to_hex(open_only.id)) != std::string::npos);
  auto live = live_of(both);
  CHECK_FALSE(stranger.live_arrived("s", 1, live));
  CHECK_FALSE(stranger.live_arrived("s", 1, live_of(open_and_unknown)));
  CHECK(stranger.take_withheld() == 4);
  REQUIRE(inside.open_subscription("s").ok());
  (void)inside.history_arrived("s", 1, {});
  CHECK(inside.live_arrived("s", 1, live));
  // COUNT's lists name the private room, so its SQL leaves the event out for the stranger too.
  auto hiding = stranger.hidden_rooms();
  CHECK(std::find(hiding.state_only.begin(), hiding.state_only.end(), "locked") != hiding.state_only.end());
}

TEST_CASE("the SQL's room lists name every room the pod knows, so that it hides the others as live",
          "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto stranger = authed_as(outsider, policy);
  auto inside = authed_as(member, policy);
  auto community_admin = authed_as(admin, policy);
  const std::vector<std::string> known{"ghost", "locked", "open"};
  for (auto* reader : {&stranger, &inside, &community_admin}) {
    auto hiding = reader->history_hiding();
    CHECK(hiding.unknown_hidden);
    auto listed = hiding.listed();
    std::sort(listed.begin(), listed.end());
    CHECK(listed == known);
  }
  // Owner and admins read every room whole, as live delivery shows them: but for unknown rooms.
  CHECK(community_admin.history_hiding().whole == known);
  CHECK(community_admin.history_hiding().regular_hidden().empty());
  // A room's admin reads it whole, and the lists still name it.
  auto led = room("open", {});
  led.members = {{member.public_key(), {std::string(protocol::room_admin_role)}}};
  policy.members->set_rooms(std::make_shared<const actors::room_index>(std::vector{led}), 2);
  auto hiding = inside.history_hiding();
  CHECK(hiding.whole == std::vector<std::string>{"open"});
  CHECK(hiding.listed() == std::vector<std::string>{"open"});
  // A community with no room here: no per-row check.
  policy.members->set_rooms(std::make_shared<const actors::room_index>(), 3);
  CHECK(stranger.hidden_rooms().empty());
}

TEST_CASE("a room the reader loses while its history is read hides the rows that borrowed it",
          "[actors][rooms]") {
  auto policy = policy_with_rooms();
  policy.host = "relay.test";
  auto inside = authed_as(member, policy);
  protocol::filter comments;
  comments.kinds = {1111};
  auto sub = inside.open_subscription("s", {comments});
  REQUIRE(sub.ok());
  // The query starts while the member is in the private room: its SQL keeps that room's comments.
  CHECK(inside.history_hiding_for("s", sub.value()).regular_hidden().empty());
  auto post = chat(member, "locked");
  auto comment = test::sign_event(member, 1111, "re", {{"E", protocol::to_hex(post.id)}, {"K", "9"}});
  auto first = inside.history_arrived("s", sub.value(), {protocol::render_event_json(comment)}, 0, false);
  CHECK(first.size() == 1);

  // A room created meanwhile (hidden from all but its creator until its first edit) is not one
  // the query could have read: it withholds nothing.
  auto created = room("fresh", {true, true, true, true});
  created.members.clear();
  policy.members->set_rooms(std::make_shared<const actors::room_index>(std::vector{
                              room("open", {}), room("locked", {true, true, false, false}),
                              room("ghost", {true, false, true, false}), created}),
                            2);
  auto second = inside.history_arrived("s", sub.value(), {protocol::render_event_json(comment)}, 0, false);
  CHECK(second.size() == 1);

  // Removed from the room before the next page arrives.
  auto without = room("locked", {true, true, false, false});
  without.members.clear();
  policy.members->set_rooms(std::make_shared<const actors::room_index>(
                              std::vector{room("open", {}), without, room("ghost", {true, false, true, false}), created}),
                            3);
  auto later = inside.history_arrived("s", sub.value(), {protocol::render_event_json(comment)}, 0, true);
  CHECK(later == std::vector<std::string>{protocol::render_eose("s")});
  CHECK(inside.take_withheld() == 1);
}
