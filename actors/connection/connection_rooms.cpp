// SPDX-License-Identifier: MIT
// The connection's room rules: who may post in which room, and which rooms' events a reader
// sees (REQ filters, history rows, live events).
#include "actors/connection/connection.hpp"

#include <algorithm>

#include "protocol/room.hpp"
#include "protocol/room_rules.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;
using protocol::general_room;
using protocol::reason;
using protocol::rejection;

protocol::room_reader connection::reader_of(const cached_room& room,
                                            const std::optional<protocol::bytes32>& who) const {
  return standing_in(room, policy_.members.get(), who);
}

std::optional<rejection> connection::check_room_event(const protocol::event& ev,
                                                      std::int64_t now) const {
  // Before the room: an event without `h` may borrow rooms from addresses it names.
  if (auto too_many = protocol::too_many_rooms(ev))
    return protocol::invalid(*too_many);
  const std::string* room = protocol::room_of(ev);
  if (!room)
    return std::nullopt;
  if (auto late = protocol::check_room_time(ev, now, policy_.room_late_seconds))
    return late;
  // A request is judged once parsed, by refuse_room_request and its transaction: a malformed
  // one is refused the same whether its room exists or not.
  if (protocol::is_room_request_kind(ev.kind) || !policy_.members)
    return std::nullopt;
  // A deletion removes only its author's own events (checked where it is applied), and Flotilla
  // tags it with the room of what it deletes: someone who left a restricted room may still take
  // back what they posted there.
  bool deletion = ev.kind == 5;
  auto rooms = policy_.members->rooms();
  // The event is posted to every room it names, so each must exist and let the author write (as
  // every one must let a reader read: rooms_visible). A room hidden from the author is one that
  // does not exist, to them.
  for (const auto& t : ev.tags) {
    if (t.size() < 2 || t[0] != "h" || t[1] == general_room)
      continue;
    const cached_room* cached = rooms->find(t[1]);
    const auto author = cached ? reader_of(*cached, ev.pubkey) : protocol::room_reader{};
    if (!cached || protocol::room_unseen(cached->flags, author))
      return protocol::invalid("there is no room \"" + t[1].substr(0, protocol::max_room_id_bytes)
                               + "\" in this community");
    if (!deletion && !protocol::room_write_allowed(cached->flags, ev.kind, author))
      return rejection{reason::restricted, "only members of this room may post in it"};
  }
  return std::nullopt;
}

std::optional<protocol::room_outcome> connection::refuse_room_request(const protocol::room_request& request) const {
  using protocol::room_action;
  if (!policy_.members)
    return std::nullopt;
  auto standing = storage::standing_of(policy_.members->role_of(request.author));
  auto rooms = policy_.members->rooms();
  const cached_room* room = rooms->find(request.room);
  // A join or a leave goes on whatever the cache holds, to be answered by one path, checks and
  // bounds whether its room is unknown, hidden from the author or neither (an open hidden room
  // admits anyone who knows its id, and a room another pod just made may be missing here).
  if (request.action == room_action::join || request.action == room_action::leave)
    return std::nullopt;
  const bool create = request.action == room_action::create_room;
  auto rank = protocol::room_rank::none;
  if (room)
    if (auto it = room->members.find(request.author); it != room->members.end())
      rank = it->second;
  // A room hidden from the author is answered as one that does not exist, in the words its
  // transaction uses (plan_room_change).
  const bool unseen = room && protocol::room_unseen(room->flags, reader_of(*room, request.author));
  if (!room && !create)
    return protocol::room_outcome::no_such_room;
  if (unseen)
    return create ? protocol::room_outcome::not_allowed : protocol::room_outcome::no_such_room;
  if (protocol::room_action_allowed(request.action, rank, standing))
    return std::nullopt;
  return create && room ? protocol::room_outcome::room_exists : protocol::room_outcome::not_allowed;
}

bool connection::rooms_visible(const std::vector<std::string>& rooms, std::uint32_t kind,
                               bool names_reader) const {
  return rooms_shown(rooms, kind, names_reader, gone_rooms::deleted);
}

bool connection::rooms_shown(const std::vector<std::string>& rooms, std::uint32_t kind,
                             bool names_reader, gone_rooms gone) const {
  if (!policy_.members || rooms.empty())
    return true;
  auto cache = policy_.members->rooms();
  // Its events went with it: what was on its way shows to nobody. The deletion request itself
  // (9008, kept) names the room, and must show: it is how clients learn the room is gone.
  auto is_gone = [&](const std::string& room) {
    return cache->was_deleted(room)
           || (gone == gone_rooms::deleted_or_unknown && room != general_room && !cache->find(room));
  };
  if (kind != protocol::room_delete_kind && std::ranges::any_of(rooms, is_gone))
    return false;
  if (names_reader && protocol::shown_to_named(kind))
    return true;
  return protocol::event_visible(rooms, kind, [&](const std::string& room) {
    const cached_room* cached = cache->find(room);
    return cached ? std::optional(protocol::room_view{cached->flags, reader_of(*cached, authenticated_)})
                  : std::nullopt;
  });
}

bool connection::event_visible(const live_event& event) const {
  const protocol::event& ev = *event.ev;
  // Stored with the rooms it borrows: those decide (a comment's thread's, an edit's that left
  // the `h` out). A borrower the writer did not say the rooms of shows only to a reader no room
  // hides anything from.
  if (event.borrowed_rooms && policy_.members)
    return rooms_shown(*event.borrowed_rooms, ev.kind, false, gone_rooms::deleted_or_unknown);
  if (policy_.members && protocol::borrows_from_referents(ev))
    return hidden_rooms().regular_hidden().empty();
  bool names_reader = authenticated_ && protocol::names_in_room_change(ev, *authenticated_);
  return rooms_shown(protocol::rooms_of_event(ev), ev.kind, names_reader,
                     gone_rooms::deleted_or_unknown);
}

protocol::room_hiding connection::history_hiding() const {
  if (!policy_.members || !policy_.members->rooms()->concerns_rows())
    return {};
  return hidden_rooms();
}

protocol::room_hiding connection::history_hiding_for(const std::string& id, std::uint64_t generation) {
  auto hiding = history_hiding();
  if (auto it = subscriptions_.find(id); it != subscriptions_.end() && it->second.generation == generation) {
    it->second.read_with = hiding;
    it->second.rooms_at_start = policy_.members ? policy_.members->rooms() : nullptr;
  }
  return hiding;
}

bool connection::lost_a_room(const subscription& sub) const {
  if (!sub.rooms_at_start)
    return false;
  auto was_hidden = sub.read_with.regular_hidden();
  return std::ranges::any_of(history_hiding().regular_hidden(), [&](const std::string& room) {
    return sub.rooms_at_start->find(room) && std::ranges::find(was_hidden, room) == was_hidden.end();
  });
}

bool connection::borrows_unnamed_rooms(std::string_view json) {
  auto kind = protocol::rendered_kind(json);
  return kind && protocol::may_carry_borrowed_rooms(*kind) && !protocol::rooms_of_rendered(json);
}

protocol::room_hiding connection::hidden_rooms() const {
  protocol::room_hiding hiding;
  if (!policy_.members)
    return hiding;
  auto rooms = policy_.members->rooms();
  for (const auto& [id, cached] : rooms->all())
    protocol::hide_room(hiding, id, cached.flags, reader_of(cached, authenticated_));
  if (authenticated_)
    hiding.reader = protocol::to_hex(*authenticated_);
  // A community with no room here pays no per-row check (nor does history_reply): a row naming
  // one is then of the community's first room, created on another pod this second, and shows
  // until this pod loads it.
  hiding.unknown_hidden = rooms->concerns_rows();
  // In one order whatever the map's: two hidings compare equal when they hide the same.
  for (auto* rooms_hidden : {&hiding.unseen, &hiding.state_only, &hiding.codes_hidden, &hiding.whole})
    std::sort(rooms_hidden->begin(), rooms_hidden->end());
  return hiding;
}

bool connection::rendered_visible(std::string_view json) {
  auto rooms = protocol::rooms_of_rendered(json);
  if (!rooms)
    return true;
  bool names_reader = authenticated_ && !rooms->named.empty()
                      && std::ranges::find(rooms->named, protocol::to_hex(*authenticated_)) != rooms->named.end();
  // A room the cache does not hold hides what names it, as live: posting needs the room, so
  // such a row is of one created on another pod that this pod has not read yet, maybe private.
  if (rooms_shown(rooms->rooms, rooms->kind, names_reader, gone_rooms::deleted_or_unknown))
    return true;
  ++withheld_;
  return false;
}

std::optional<rejection> connection::check_room_filters(const std::vector<protocol::filter>& filters) const {
  // Only an anonymous reader is refused, so that it authenticates. An authenticated one gets the
  // subscription, and each event is shown or hidden as it comes (rooms_visible): Flotilla keeps
  // `{kinds: [9000], #p: [me], #h: [room]}` open on rooms it is not in yet, and learns from it
  // that it was let in. A CLOSED would end that subscription for good.
  if (authenticated_)
    return std::nullopt;
  // A deleted room holds nothing to refuse: asking for it finds nothing (rooms_visible hides
  // what was on its way), and its deletion is public (9008). A room this pod does not know is
  // refused like a hidden one, so that the answer does not tell who may guess a hidden room's
  // id that it exists.
  if (!policy_.members)
    return std::nullopt;
  const auto cache = policy_.members->rooms();
  auto readable = [&](const std::string& room) {
    if (cache->was_deleted(room))
      return true;
    return (room == general_room || cache->find(room)) && rooms_visible({room}, 9);
  };
  for (const auto& f : filters)
    for (const auto& tag : f.tags)
      if (tag.name == 'h' && !std::ranges::all_of(tag.values, readable))
        return rejection{reason::auth_required, "this room is not public; authenticate to read it"};
  return std::nullopt;
}

std::vector<std::string> connection::admitted_rooms(const protocol::event& ev) const {
  if (!policy_.members)
    return {};
  auto cache = policy_.members->rooms();
  if (cache->size() == 0)
    return {};
  auto rooms = protocol::rooms_of_event(ev);
  std::erase_if(rooms, [&](const std::string& room) {
    return room == general_room || !cache->find(room);
  });
  return rooms;
}

} // namespace comb::actors
