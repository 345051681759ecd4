// SPDX-License-Identifier: MIT
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>

#include "protocol/canonical_json.hpp"
#include "protocol/event_check.hpp"
#include "protocol/room_events.hpp"
#include "support/room_records.hpp"
#include "support/signed_events.hpp"

using namespace comb::protocol;

namespace {

const key_pair& alice() {
  static key_pair k = *key_pair::from_secret(*array_from_hex<32>(std::string(63, '0') + "1"));
  return k;
}
const key_pair& bob() {
  static key_pair k = *key_pair::from_secret(*array_from_hex<32>(std::string(63, '0') + "2"));
  return k;
}
const key_pair& relay() {
  static key_pair k = *key_pair::from_secret(*array_from_hex<32>(std::string(63, '0') + "3"));
  return k;
}

room_request request_of(const event& ev) {
  auto parsed = parse_room_request(ev);
  REQUIRE(parsed);
  return parsed.value();
}

room_state room_with(std::vector<room_member> members, room_flags flags = {}) {
  room_state room;
  room.exists = true;
  room.id = "pizza";
  room.meta.name = "pizza";
  room.meta.flags = flags;
  room.members = std::move(members);
  return room;
}

} // namespace

TEST_CASE("room requests are read from their tags", "[room]") {
  auto put = comb::test::sign_event(alice(), 9000, "", {{"h", "pizza"}, {"p", to_hex(bob().public_key()), "moderator"}});
  auto request = request_of(put);
  CHECK(request.action == room_action::put_user);
  CHECK(request.room == "pizza");
  CHECK(request.subject == bob().public_key());
  CHECK(request.roles == std::vector<std::string>{"moderator"});

  auto edit = comb::test::sign_event(alice(), 9002, "", {{"h", "pizza"}, {"name", "Pizza"}, {"private"}, {"closed"}});
  auto meta = request_of(edit);
  CHECK(meta.name == "Pizza");
  CHECK_FALSE(meta.about);
  CHECK(meta.flags == room_flags{true, false, false, true});

  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9021, "", {})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9021, "", {{"h", "bad id!"}})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9000, "", {{"h", "pizza"}})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9005, "", {{"h", "pizza"}})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9009, "", {{"h", "pizza"}})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9003, "", {{"h", "pizza"}})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9007, "", {{"h", "_"}})));
  CHECK(request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}, {"code", "xyz"}})).code == "xyz");
  // A request is stored under every `h` it carries: a second room would go unchecked.
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9021, "", {{"h", "lobby"}, {"h", "locked"}})));
  CHECK(request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}, {"h", "pizza"}})).room == "pizza");
}

TEST_CASE("a 9000 or 9001 names one user: several are refused, not applied to the first alone", "[room]") {
  // Applied to its first `p` only, a request naming two would answer true for the second and
  // be stored claiming a change the room's state does not hold.
  const auto bob_hex = to_hex(bob().public_key());
  for (std::uint32_t kind : {9000u, 9001u}) {
    INFO(kind);
    auto two = parse_room_request(comb::test::sign_event(
      alice(), kind, "", {{"h", "pizza"}, {"p", bob_hex}, {"p", to_hex(relay().public_key())}}));
    REQUIRE_FALSE(two);
    CHECK(two.error().text() == "invalid: one user per request: every p tag must name the same hex pubkey");
    auto twice = request_of(comb::test::sign_event(alice(), kind, "", {{"h", "pizza"}, {"p", bob_hex}, {"p", bob_hex}}));
    CHECK(twice.subject == bob().public_key());
  }
  // Named twice, one user must be given the same roles each time.
  auto differing = parse_room_request(comb::test::sign_event(
    alice(), 9000, "", {{"h", "pizza"}, {"p", bob_hex}, {"p", bob_hex, "admin"}}));
  REQUIRE_FALSE(differing);
  CHECK(differing.error().text() == "invalid: one user per request: every p tag must name the same hex pubkey and roles");
  auto agreeing = request_of(comb::test::sign_event(
    alice(), 9000, "", {{"h", "pizza"}, {"p", bob_hex, "moderator"}, {"p", bob_hex, "moderator", ""}}));
  CHECK(agreeing.roles == std::vector<std::string>{"moderator"});
}

TEST_CASE("a join carrying an invite code is applied but not kept", "[room]") {
  CHECK_FALSE(request_event_kept(request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}, {"code", "xyz"}}))));
  CHECK(request_event_kept(request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}}))));
  // Newer welshman sends the code as `claim`: read and withheld the same way.
  auto claimed = request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}, {"claim", "xyz"}}));
  CHECK(claimed.code == "xyz");
  CHECK_FALSE(request_event_kept(claimed));
  // An empty one first does not hide a code after it.
  auto second = request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}, {"code", ""}, {"claim", ""}, {"claim", "xyz"}}));
  CHECK(second.code == "xyz");
  CHECK(request_event_kept(request_of(comb::test::sign_event(alice(), 9021, "", {{"h", "pizza"}, {"claim", ""}}))));
  CHECK(request_event_kept(request_of(comb::test::sign_event(alice(), 9009, "", {{"h", "pizza"}, {"code", "xyz"}}))));
}

TEST_CASE("room kinds and ids", "[room]") {
  CHECK(is_room_request_kind(9000));
  CHECK(is_room_request_kind(9020));
  CHECK(is_room_request_kind(9022));
  CHECK_FALSE(is_room_request_kind(9030));
  CHECK(is_room_state_kind(39000));
  CHECK(is_room_state_kind(39005));
  CHECK_FALSE(is_room_state_kind(39006));
  CHECK(valid_room_id("plokaru7"));
  CHECK_FALSE(valid_room_id(""));
  CHECK_FALSE(valid_room_id(std::string(65, 'a')));
  CHECK_FALSE(valid_room_id("a\"b"));
}

TEST_CASE("late room events are refused, others are not concerned", "[room]") {
  std::int64_t now = 1'700'000'000;
  auto late = comb::test::sign_event(alice(), 9, "hi", {{"h", "pizza"}}, now - 901);
  auto fresh = comb::test::sign_event(alice(), 9, "hi", {{"h", "pizza"}}, now - 899);
  auto plain = comb::test::sign_event(alice(), 1, "hi", {}, now - 100000);
  auto refused = check_room_time(late, now, 900);
  REQUIRE(refused);
  CHECK(refused->text().starts_with("invalid: "));
  CHECK_FALSE(check_room_time(fresh, now, 900));
  CHECK_FALSE(check_room_time(plain, now, 900));
}

TEST_CASE("the room rules: who may do what", "[room]") {
  auto create = request_of(comb::test::sign_event(alice(), 9007, "", {{"h", "pizza"}}));
  SECTION("only community owner and admins create rooms") {
    CHECK(plan_room_change({}, create, {community_standing::member}).outcome == room_outcome::not_allowed);
    auto plan = plan_room_change({}, create, {community_standing::admin});
    REQUIRE(plan.outcome == room_outcome::changed);
    CHECK(plan.parts.metadata);
    CHECK(plan.parts.admins);
    CHECK(plan.parts.members);
    CHECK(plan.parts.roles);
    CHECK(plan.store_request);
    REQUIRE(plan.after.members.size() == 1);
    CHECK(plan.after.members[0].roles == std::vector<std::string>{"admin"});
    CHECK(plan_room_change(plan.after, create, {community_standing::owner}).outcome
          == room_outcome::room_exists);
    // Locked (private, restricted, hidden, closed) until the 9002 that apps send with its flags.
    CHECK(plan.after.meta.flags == room_flags{true, true, true, true});
    auto opened = plan_room_change(
      plan.after, request_of(comb::test::sign_event(alice(), 9002, "", {{"h", "pizza"}, {"name", "Pizza"}})),
      {community_standing::admin});
    REQUIRE(opened.outcome == room_outcome::changed);
    CHECK(opened.after.meta.flags == room_flags{});
  }
  SECTION("moderators add and remove plain members, only admins grant roles") {
    auto room = room_with({{alice().public_key(), {"moderator"}}});
    auto plain = request_of(comb::test::sign_event(alice(), 9000, "", {{"h", "pizza"}, {"p", to_hex(bob().public_key())}}));
    auto granted = request_of(comb::test::sign_event(alice(), 9000, "", {{"h", "pizza"}, {"p", to_hex(bob().public_key()), "admin"}}));
    auto plan = plan_room_change(room, plain, {community_standing::member, community_standing::member});
    CHECK(plan.outcome == room_outcome::changed);
    CHECK(plan.parts.members);
    CHECK_FALSE(plan.parts.admins);
    CHECK(plan_room_change(room, granted, {community_standing::member}).outcome == room_outcome::not_allowed);
    CHECK(plan_room_change(room, granted, {community_standing::admin}).outcome == room_outcome::changed);
    CHECK(plan_room_change(plan.after, plain, {community_standing::member}).outcome == room_outcome::already_member);
  }
  SECTION("a moderator cannot remove an admin; members cannot moderate") {
    auto room = room_with({{alice().public_key(), {"moderator"}}, {bob().public_key(), {"admin"}}});
    auto remove = request_of(comb::test::sign_event(alice(), 9001, "", {{"h", "pizza"}, {"p", to_hex(bob().public_key())}}));
    CHECK(plan_room_change(room, remove, {community_standing::member}).outcome == room_outcome::not_allowed);
    auto edit = request_of(comb::test::sign_event(alice(), 9002, "", {{"h", "pizza"}, {"name", "x"}}));
    CHECK(plan_room_change(room, edit, {community_standing::member}).outcome == room_outcome::not_allowed);
    auto removal_by_admin = request_of(comb::test::sign_event(bob(), 9001, "", {{"h", "pizza"}, {"p", to_hex(alice().public_key())}}));
    auto plan = plan_room_change(room, removal_by_admin, {community_standing::member});
    CHECK(plan.outcome == room_outcome::changed);
    CHECK(plan.parts.admins); // alice had a role
    auto plain_member_room = room_with({{alice().public_key(), {}}});
    auto del = request_of(comb::test::sign_event(alice(), 9005, "", {{"h", "pizza"}, {"e", std::string(64, 'a')}}));
    CHECK(plan_room_change(plain_member_room, del, {community_standing::member}).outcome == room_outcome::not_allowed);
  }
  SECTION("an edit that changes nothing writes nothing") {
    auto room = room_with({});
    auto same = request_of(comb::test::sign_event(alice(), 9002, "", {{"h", "pizza"}, {"name", "pizza"}}));
    CHECK(plan_room_change(room, same, {community_standing::owner}).outcome == room_outcome::nothing_to_do);
    auto closing = request_of(comb::test::sign_event(alice(), 9002, "", {{"h", "pizza"}, {"closed"}}));
    auto plan = plan_room_change(room, closing, {community_standing::owner});
    CHECK(plan.parts.metadata);
    CHECK(plan.after.meta.flags.closed);
    CHECK(plan.after.meta.name == "pizza");
  }
}

TEST_CASE("9010 pins: moderators and admins replace the list, 39005 mirrors it", "[room]") {
  const std::string note(64, 'a');
  const std::string address = "30023:" + to_hex(bob().public_key()) + ":post";
  auto pin = request_of(comb::test::sign_event(
    alice(), 9010, "", {{"h", "pizza"}, {"a", address}, {"p", "ignored"}, {"e", note, "wss://x"}}));
  CHECK(pin.action == room_action::update_pins);
  CHECK(pin.pins == std::vector<tag>{{"a", address}, {"e", note}});
  CHECK(request_of(comb::test::sign_event(alice(), 9010, "", {{"h", "pizza"}})).pins.empty());
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9010, "", {{"h", "pizza"}, {"e", "zz"}})));
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9010, "", {{"h", "pizza"}, {"a", "x:y:z"}})));
  std::vector<tag> many{{"h", "pizza"}};
  for (std::size_t i = 0; i <= max_room_pins; ++i)
    many.push_back({"e", note});
  CHECK_FALSE(parse_room_request(comb::test::sign_event(alice(), 9010, "", many)));

  auto moderated = room_with({{alice().public_key(), {"moderator"}}});
  auto plan = plan_room_change(moderated, pin, {community_standing::member});
  REQUIRE(plan.outcome == room_outcome::changed);
  CHECK(plan.parts.pins);
  CHECK_FALSE(plan.parts.members);
  CHECK(plan.store_request);
  CHECK(plan.after.pins == pin.pins);
  auto pins = sign_room_pins(relay(), plan.after, 100);
  CHECK(pins.kind == 39005);
  CHECK(comb::test::unsalted(pins.tags) == std::vector<tag>{{"d", "pizza"}, {"a", address}, {"e", note}});
  CHECK_FALSE(verify_event(pins));
  CHECK(plan_room_change(room_with({{alice().public_key(), {}}}), pin, {community_standing::member}).outcome
        == room_outcome::not_allowed);
  CHECK(plan_room_change(room_with({}), pin, {community_standing::admin}).outcome == room_outcome::changed);
}

TEST_CASE("joins and leaves", "[room]") {
  auto join = request_of(comb::test::sign_event(bob(), 9021, "", {{"h", "pizza"}}));
  auto leave = request_of(comb::test::sign_event(bob(), 9022, "", {{"h", "pizza"}}));
  CHECK(plan_room_change({}, join, {}).outcome == room_outcome::no_such_room);
  auto open = room_with({});
  auto joined = plan_room_change(open, join, {community_standing::outsider});
  REQUIRE(joined.outcome == room_outcome::changed);
  CHECK(joined.parts.members);
  CHECK(joined.relay_signs == 9000);
  CHECK_FALSE(joined.parts.metadata); // an open room's 39000 was already theirs to read
  CHECK(plan_room_change(joined.after, join, {}).outcome == room_outcome::already_member);
  CHECK(plan_room_change(open, join, {community_standing::outsider, community_standing::outsider, true})
          .outcome == room_outcome::not_in_community);
  auto closed = room_with({}, {false, false, false, true});
  CHECK(plan_room_change(closed, join, {}).outcome == room_outcome::invite_required);
  CHECK(plan_room_change(closed, join, {community_standing::member, community_standing::member, false, true})
          .outcome == room_outcome::changed);
  CHECK(plan_room_change(closed, join, {community_standing::member, community_standing::member})
          .outcome == room_outcome::invite_required);
  // The community's owner and admins join a closed room without a code (Flotilla's room form
  // joins after every edit): they may add themselves with a 9000 anyway.
  for (auto manager : {community_standing::admin, community_standing::owner})
    CHECK(plan_room_change(closed, join, {manager, manager}).outcome == room_outcome::changed);
  auto left = plan_room_change(joined.after, leave, {});
  CHECK(left.outcome == room_outcome::changed);
  CHECK(left.relay_signs == 9001);
  CHECK(left.after.members.empty());
  CHECK(plan_room_change(open, leave, {}).outcome == room_outcome::not_member);
}

TEST_CASE("a hidden room is answered to whoever it is hidden from as a room that does not exist", "[room]") {
  auto by = [](const key_pair& who, std::uint32_t kind, std::vector<comb::protocol::tag> more = {}) {
    more.insert(more.begin(), {"h", "pizza"});
    return request_of(comb::test::sign_event(who, kind, "", more));
  };
  const room_state nothing; // no room of that id
  auto hidden_closed = room_with({}, {true, true, true, true});
  room_context member{community_standing::member, community_standing::member};
  const auto someone = to_hex(alice().public_key());
  for (const auto& room : {nothing, hidden_closed}) {
    CHECK(plan_room_change(room, by(bob(), 9021), member).outcome == room_outcome::no_such_room);
    CHECK(plan_room_change(room, by(bob(), 9007), member).outcome == room_outcome::not_allowed);
    CHECK(plan_room_change(room, by(bob(), 9000, {{"p", someone}}), member).outcome == room_outcome::no_such_room);
    CHECK(plan_room_change(room, by(bob(), 9002), member).outcome == room_outcome::no_such_room);
  }
  // A leave of either leaves things as asked (room_reply_for says the same for both).
  CHECK(plan_room_change(hidden_closed, by(bob(), 9022), member).outcome == room_outcome::not_member);
  CHECK(plan_room_change(nothing, by(bob(), 9022), member).outcome == room_outcome::no_such_room);
  // A valid code still admits; the id of an open hidden room is its invitation.
  room_context with_code = member;
  with_code.code_valid = true;
  CHECK(plan_room_change(hidden_closed, by(bob(), 9021), with_code).outcome == room_outcome::changed);
  // Not hidden from its members, nor from the community's owner and admins.
  auto with_bob = room_with({{bob().public_key(), {}}}, {true, true, true, true});
  CHECK(plan_room_change(with_bob, by(bob(), 9007), member).outcome == room_outcome::room_exists);
  room_context admin{community_standing::admin, community_standing::admin};
  CHECK(plan_room_change(hidden_closed, by(bob(), 9007), admin).outcome == room_outcome::room_exists);
  CHECK(plan_room_change(hidden_closed, by(bob(), 9002), admin).outcome == room_outcome::changed);
}

TEST_CASE("a newcomer to a hidden or private room gets the state it hid from them, signed again", "[room]") {
  auto join = request_of(comb::test::sign_event(bob(), 9021, "", {{"h", "pizza"}}));
  auto put = request_of(comb::test::sign_event(alice(), 9000, "",
                                               {{"h", "pizza"}, {"p", to_hex(bob().public_key())}}));
  room_context admin{community_standing::owner, community_standing::member};
  auto hidden = room_with({}, {false, false, true, false});
  for (const auto& plan : {plan_room_change(hidden, join, {community_standing::member}),
                           plan_room_change(hidden, put, admin)}) {
    REQUIRE(plan.outcome == room_outcome::changed);
    CHECK(plan.parts.metadata); // Flotilla lists rooms by their 39000
    CHECK(plan.parts.admins);
    CHECK(plan.parts.roles);
    CHECK(plan.parts.members);
  }
  auto priv = plan_room_change(room_with({}, {true, false, false, false}), put, admin);
  REQUIRE(priv.outcome == room_outcome::changed);
  CHECK_FALSE(priv.parts.metadata); // a private room's 39000 shows to all
  CHECK(priv.parts.admins);
  CHECK(priv.relay_signs == 0); // the put is stored: it is the record
}

TEST_CASE("who reads and writes a room", "[room]") {
  room_flags priv{true, false, false, false};
  room_flags hidden{true, false, true, false};
  room_flags restricted{false, true, false, false};
  room_reader outsider{};
  room_reader member{true, false, false};
  room_reader admin{false, false, true};
  CHECK(room_event_visible({}, 9, outsider));
  CHECK_FALSE(room_event_visible(priv, 9, outsider));
  // NIP-29: private hides the messages, not the group metadata (39000-39003); pins name messages.
  CHECK(room_event_visible(priv, 39002, outsider));
  CHECK(room_event_visible(priv, 39001, outsider));
  CHECK(room_event_visible(priv, 39000, outsider));
  CHECK_FALSE(room_event_visible(priv, room_pins_kind, outsider));
  CHECK_FALSE(room_event_visible(hidden, 39002, outsider));
  CHECK_FALSE(room_event_visible(hidden, 39000, outsider));
  CHECK(room_event_visible(hidden, 9, member));
  CHECK_FALSE(room_event_visible({}, 9009, member));
  CHECK(room_event_visible({}, 9009, admin));
  CHECK_FALSE(room_write_allowed(restricted, 9, outsider));
  CHECK(room_write_allowed(restricted, 9, member));
  CHECK(room_write_allowed({}, 9, outsider));
  // A reaction is not a post: whoever reads a restricted room reacts, unless it is private.
  CHECK(room_write_allowed(restricted, reaction_kind, outsider));
  room_flags restricted_private = restricted;
  restricted_private.is_private = true;
  CHECK_FALSE(room_write_allowed(restricted_private, reaction_kind, outsider));
  CHECK(room_write_allowed(restricted_private, reaction_kind, member));
  // A hidden room, restricted or not, is none to an outsider: nothing of theirs goes in.
  for (auto kind : {9u, reaction_kind}) {
    CHECK_FALSE(room_write_allowed(hidden, kind, outsider));
    CHECK(room_write_allowed(hidden, kind, member));
    CHECK(room_write_allowed(hidden, kind, admin));
  }
}

namespace {

/// Whether `hiding` lets an event of `kind` naming `rooms` through, as COUNT's SQL
/// (hidden_rooms_sql) reads it: the row is left out when any of its rooms hides it.
bool passes(const room_hiding& hiding, const std::vector<std::string>& rooms, std::uint32_t kind) {
  auto names = [](const std::vector<std::string>& list, const std::string& room) {
    return std::find(list.begin(), list.end(), room) != list.end();
  };
  for (const auto& room : rooms) {
    if (names(hiding.unseen, room))
      return false;
    if (names(hiding.state_only, room) && !is_group_metadata_kind(kind))
      return false;
    if (names(hiding.codes_hidden, room) && kind == room_create_invite_kind)
      return false;
  }
  return true;
}

const std::vector<room_flags> all_flags{{false, false, false, false}, {true, false, false, false},
                                        {true, false, true, false},   {false, false, true, false},
                                        {false, true, false, true}};
const std::vector<room_reader> readers{{}, {true, false, false}, {true, true, false}, {false, false, true}};
const std::vector<std::uint32_t> kinds{9, 9009, 9000, 39000, 39001, 39002, 39003, 1};

} // namespace

TEST_CASE("room hiding for COUNT agrees with room_event_visible", "[room]") {
  for (const auto& flags : all_flags)
    for (const auto& reader : readers) {
      room_hiding hiding;
      hide_room(hiding, "r", flags, reader);
      for (auto kind : kinds)
        CHECK(passes(hiding, {"r"}, kind) == room_event_visible(flags, kind, reader));
    }
}

TEST_CASE("an event of several rooms shows only where every room shows it, for REQ and COUNT alike",
          "[room]") {
  // Two rooms with every pair of flags and standings; the event names both, in both orders,
  // and a room this community does not have.
  for (const auto& flags_a : all_flags)
    for (const auto& flags_b : all_flags)
      for (const auto& reader_a : readers)
        for (const auto& reader_b : readers) {
          auto view_of = [&](const std::string& room) -> std::optional<room_view> {
            if (room == "a")
              return room_view{flags_a, reader_a};
            if (room == "b")
              return room_view{flags_b, reader_b};
            return std::nullopt;
          };
          room_hiding hiding;
          hide_room(hiding, "a", flags_a, reader_a);
          hide_room(hiding, "b", flags_b, reader_b);
          for (auto kind : kinds) {
            bool both = room_event_visible(flags_a, kind, reader_a)
                        && room_event_visible(flags_b, kind, reader_b);
            for (const std::vector<std::string>& rooms :
                 {std::vector<std::string>{"a", "b"}, {"b", "a"}, {"ghost", "b", "a"}}) {
              CHECK(event_visible(rooms, kind, view_of) == both);
              CHECK(passes(hiding, rooms, kind) == both);
            }
          }
        }
  CHECK(event_visible({}, 9, [](const std::string&) { return std::optional<room_view>{}; }));
}

TEST_CASE("relay-signed room state has the NIP-29 shape", "[room]") {
  auto room = room_with({{alice().public_key(), {"admin"}}, {bob().public_key(), {}}},
                        {true, false, false, true});
  auto meta = sign_room_metadata(relay(), room, 100);
  CHECK(meta.kind == 39000);
  CHECK(d_tag(meta) == "pizza");
  CHECK(std::find(meta.tags.begin(), meta.tags.end(), tag{"private"}) != meta.tags.end());
  CHECK(std::find(meta.tags.begin(), meta.tags.end(), tag{"closed"}) != meta.tags.end());
  CHECK_FALSE(verify_event(meta));
  auto admins = sign_room_admins(relay(), room, 100);
  CHECK(admins.tags.size() == 3); // d, the admin, salt
  CHECK(admins.tags[1] == tag{"p", to_hex(alice().public_key()), "admin"});
  auto members = sign_room_members(relay(), room, 100);
  CHECK(comb::test::unsalted(members.tags).size() == 3);
  auto removal = sign_room_member_change(relay(), 9001, "pizza", bob().public_key(), 100);
  CHECK(removal.kind == 9001);
  CHECK(*room_of(removal) == "pizza");
  // A salt nobody without the relay's secret computes makes the records' ids unpredictable (they
  // hold only known values: a room, a member, a second); derived, so the same record signed
  // twice keeps its id.
  CHECK(comb::test::unsalted(removal.tags) == std::vector<tag>{{"h", "pizza"}, {"p", to_hex(bob().public_key())}});
  CHECK(removal.tags.back()[1].size() == 32);
  CHECK(sign_room_member_change(relay(), 9001, "pizza", bob().public_key(), 100).id == removal.id);
  auto other_relay = key_pair::generate();
  auto elsewhere = sign_room_member_change(other_relay, 9001, "pizza", bob().public_key(), 100);
  CHECK(elsewhere.tags.back() != removal.tags.back());
  CHECK_FALSE(verify_event(removal));
  auto rendered = rooms_of_rendered(render_event_json(members));
  REQUIRE(rendered);
  CHECK(rendered->rooms == std::vector<std::string>{"pizza"});
  CHECK(rendered->kind == 39002);
  CHECK(rooms_of_event(members) == std::vector<std::string>{"pizza"});
  auto chat = comb::test::sign_event(bob(), 9, "[\"h\",\"fake\"]",
                                     {{"e", std::string(64, 'b')}, {"h", "pizza"}, {"h", "pasta"}});
  auto chat_rooms = rooms_of_rendered(render_event_json(chat));
  REQUIRE(chat_rooms);
  CHECK(chat_rooms->rooms == std::vector<std::string>{"pizza", "pasta"}); // every h, not content
  CHECK(rooms_of_event(chat) == std::vector<std::string>{"pizza", "pasta"});
  CHECK_FALSE(rooms_of_rendered(render_event_json(comb::test::sign_event(bob(), 1, "[\"h\",\"x\"]"))));
  // A 9001 shows to the people it names (shown_to_named); any other kind names no one.
  auto removal_rooms = rooms_of_rendered(render_event_json(removal));
  REQUIRE(removal_rooms);
  CHECK(removal_rooms->named == std::vector<std::string>{to_hex(bob().public_key())});
  CHECK(names_in_room_change(removal, bob().public_key()));
  CHECK_FALSE(names_in_room_change(removal, alice().public_key()));
  auto mention = comb::test::sign_event(bob(), 9, "", {{"h", "pizza"}, {"p", to_hex(alice().public_key())}});
  CHECK(rooms_of_rendered(render_event_json(mention))->named.empty());
  CHECK_FALSE(names_in_room_change(mention, alice().public_key()));
  // Lowercase hex only, as the database compares it.
  std::string upper = to_hex(bob().public_key());
  std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) { return static_cast<char>(std::toupper(c)); });
  CHECK_FALSE(names_in_room_change(comb::test::sign_event(relay(), 9001, "", {{"h", "pizza"}, {"p", upper}}),
                                   bob().public_key()));
  CHECK(rooms_of_event(comb::test::sign_event(bob(), 1, "")).empty());
}

TEST_CASE("a comment names its roots by address in A tags, at most 16 of them", "[room]") {
  const std::string article = "30023:" + std::string(64, 'a') + ":plan";
  auto comment = comb::test::sign_event(bob(), 1111, "", {{"K", "30023"}, {"A", article}, {"a", article}});
  CHECK(referent_addresses(comment) == std::vector<std::string_view>{article});
  CHECK(borrows_from_referents(comment));
  CHECK_FALSE(borrows_from_referents(comb::test::sign_event(bob(), 1111, "", {{"A", article}, {"h", "pizza"}})));
  CHECK_FALSE(borrows_from_referents(comb::test::sign_event(bob(), 1111, "", {{"K", "30023"}})));
  // Only an address that can be in a room, its key in lowercase: not a profile's, not room state.
  const std::string key(64, 'a');
  for (const std::string& value : {"0:" + key + ":", "39000:" + key + ":pizza", "30023:" + std::string(64, 'A') + ":x",
                                   "30023:" + key, "x:" + key + ":plan"})
    CHECK(referent_addresses(comb::test::sign_event(bob(), 1111, "", {{"A", value}})).empty());
  // Only a comment's A names a root; another borrower names what it refers to by a.
  CHECK(referent_addresses(comb::test::sign_event(bob(), 7, "+", {{"A", article}})).empty());
  std::vector<std::vector<std::string>> roots;
  for (std::size_t i = 0; i < max_referent_addresses; ++i)
    roots.push_back({"A", article + std::to_string(i)});
  CHECK_FALSE(too_many_rooms(comb::test::sign_event(bob(), 1111, "", roots)));
  roots.push_back({"A", article});
  CHECK(too_many_rooms(comb::test::sign_event(bob(), 1111, "", roots))
        == "a comment names at most 16 roots by address (A tags)");
}

TEST_CASE("a deletion, a pin or a reaction without an h borrows from the addresses its a tags name", "[room]") {
  const std::string meeting = "31923:" + std::string(64, 'a') + ":offsite";
  for (std::uint32_t kind : {deletion_kind, pin_kind, reaction_kind}) {
    auto by_address = comb::test::sign_event(bob(), kind, "", {{"d", "x"}, {"a", meeting}, {"A", meeting}});
    CHECK(referent_addresses(by_address) == std::vector<std::string_view>{meeting});
    CHECK(borrows_from_referents(by_address));
    // One with a room of its own is stored there, and borrows nothing.
    auto in_room = comb::test::sign_event(bob(), kind, "", {{"a", meeting}, {"h", "pizza"}});
    CHECK(referent_addresses(in_room).empty());
    CHECK_FALSE(borrows_from_referents(in_room));
  }
  // Not a kind that borrows, not an address that can be in a room.
  CHECK(referent_addresses(comb::test::sign_event(bob(), 1, "", {{"a", meeting}})).empty());
  CHECK(referent_addresses(comb::test::sign_event(bob(), 5, "", {{"a", "0:" + std::string(64, 'a') + ":"}})).empty());
  // At most 16 distinct addresses; the same one named twice counts once.
  std::vector<std::vector<std::string>> named;
  for (std::size_t i = 0; i < max_referent_addresses; ++i)
    named.push_back({"a", meeting + std::to_string(i)});
  named.push_back({"a", meeting + "0"});
  CHECK_FALSE(too_many_rooms(comb::test::sign_event(bob(), pin_kind, "", named)));
  named.push_back({"a", meeting});
  CHECK(too_many_rooms(comb::test::sign_event(bob(), pin_kind, "", named))
        == "an event without a room names at most 16 addresses (a tags)");
  // A deletion's addresses are bounded as its targets are, not here.
  CHECK_FALSE(too_many_rooms(comb::test::sign_event(bob(), deletion_kind, "", named)));
  named.push_back({"h", "pizza"});
  CHECK_FALSE(too_many_rooms(comb::test::sign_event(bob(), pin_kind, "", named)));
}

TEST_CASE("a comment without an h borrows the rooms of its E roots, a report those of its e", "[room]") {
  const std::string thread(64, 'a');
  auto comment = comb::test::sign_event(bob(), 1111, "more basil",
                                        {{"K", "11"}, {"E", thread, "wss://x", "ff"}, {"e", thread}});
  CHECK(room_referents(comment) == std::vector<bytes32>{*array_from_hex<32>(thread)});
  // Its own h decides instead; a root that is not a lowercase id names nothing; other kinds
  // have no roots.
  auto posted = comb::test::sign_event(bob(), 1111, "", {{"E", thread}, {"h", "pizza"}});
  CHECK(room_referents(posted).empty());
  auto upper = comb::test::sign_event(bob(), 1111, "", {{"E", std::string(64, 'A')}, {"E", "x"}});
  CHECK(room_referents(upper).empty());
  CHECK(room_referents(comb::test::sign_event(bob(), 1, "", {{"E", thread}})).empty());
  // A report (Flotilla's makeReport: p, then e with the reason) borrows through its `e` tags.
  const std::string note(64, 'b');
  auto report = comb::test::sign_event(bob(), 1984, "spam", {{"p", std::string(64, 'f')}, {"e", note, "spam"}});
  CHECK(room_referents(report) == std::vector<bytes32>{*array_from_hex<32>(note)});
  CHECK(room_referents(comb::test::sign_event(bob(), 1984, "", {{"E", note}})).empty());
  CHECK(room_referents(comb::test::sign_event(bob(), 1984, "", {{"e", note}, {"h", "pizza"}})).empty());
  filter reports;
  reports.kinds = std::vector<std::uint32_t>{1984};
  CHECK(may_match_borrower(reports));
  reports.kinds = std::vector<std::uint32_t>{1, 6};
  CHECK_FALSE(may_match_borrower(reports));
  CHECK(may_match_borrower(filter{}));
  // Flotilla's reaction to a comment and its deletion copy the comment's h, which it has none
  // of, newer Flotilla's poll vote (1018) names its poll only, and a pin (39067) what it pins:
  // each borrows through its `e`
  // tags; with an h of its own it belongs to that room instead.
  const std::string comment_id(64, 'c');
  for (std::uint32_t kind : {5U, 7U, 1018U, 39067U}) {
    auto referring = comb::test::sign_event(bob(), kind, "+", {{"k", "1111"}, {"e", comment_id}, {"p", thread}});
    CHECK(room_referents(referring) == std::vector<bytes32>{*array_from_hex<32>(comment_id)});
    CHECK(room_referents(comb::test::sign_event(bob(), kind, "+", {{"e", comment_id}, {"h", "pizza"}})).empty());
    reports.kinds = std::vector<std::uint32_t>{kind};
    CHECK(may_match_borrower(reports));
  }
}

TEST_CASE("which room changes take posting away from someone", "[room]") {
  auto leave = request_of(comb::test::sign_event(bob(), 9022, "", {{"h", "pizza"}}));
  const room_member bob_in{bob().public_key(), {}};
  room_flags restricted;
  restricted.restricted = true;
  room_flags hidden;
  hidden.hidden = true;
  room_flags closed;
  closed.closed = true;
  // Leaving (or being removed from) a room only members post in; not an open one.
  for (auto flags : {restricted, hidden}) {
    auto room = room_with({bob_in}, flags);
    CHECK(takes_posting_away(room, plan_room_change(room, leave, {}), room_action::leave));
  }
  auto open = room_with({bob_in});
  CHECK_FALSE(takes_posting_away(open, plan_room_change(open, leave, {}), room_action::leave));
  auto removal = request_of(comb::test::sign_event(alice(), 9001, "", {{"h", "pizza"}, {"p", to_hex(bob().public_key())}}));
  auto kept_out = room_with({bob_in}, restricted);
  CHECK(takes_posting_away(kept_out, plan_room_change(kept_out, removal, {community_standing::admin}),
                           room_action::remove_user));
  // A no-op takes nothing.
  auto empty = room_with({}, restricted);
  CHECK_FALSE(takes_posting_away(empty, plan_room_change(empty, leave, {}), room_action::leave));
  // An edit that makes the room restricted or hidden, not one that leaves it so or opens it.
  auto edit_to = [&](const room_flags& was, std::vector<comb::protocol::tag> flags) {
    flags.insert(flags.begin(), {"h", "pizza"});
    auto edit = request_of(comb::test::sign_event(alice(), 9002, "", flags));
    auto room = room_with({bob_in}, was);
    return takes_posting_away(room, plan_room_change(room, edit, {community_standing::admin}),
                              room_action::edit_metadata);
  };
  CHECK(edit_to({}, {{"restricted"}}));
  CHECK(edit_to({}, {{"hidden"}}));
  CHECK(edit_to(closed, {{"restricted"}, {"closed"}}));
  CHECK_FALSE(edit_to(restricted, {{"restricted"}, {"name", "new name"}}));
  CHECK_FALSE(edit_to({}, {{"closed"}}));
  CHECK_FALSE(edit_to(restricted, {}));
}
