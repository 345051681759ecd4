// SPDX-License-Identifier: MIT
#include "protocol/room.hpp"

#include <algorithm>
#include <charconv>

#include "protocol/hex.hpp"

namespace comb::protocol {
namespace {

/// An `A` value naming an address that can be in rooms (keeps_rooms_of_replaced).
bool names_room_address(std::string_view value) {
  auto named = parse_address_value(value);
  return named && keeps_rooms_of_replaced(named->kind);
}

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
         || c == '_';
}

/// Role names are stored and listed as they are: a small alphabet keeps them plain.
bool valid_role_name(const std::string& role) {
  return role.size() <= 32 && std::all_of(role.begin(), role.end(), id_char);
}

bool has_flag(const event& ev, std::string_view name) {
  return std::any_of(ev.tags.begin(), ev.tags.end(),
                     [name](const tag& t) { return !t.empty() && t[0] == name; });
}

/// A join's invite code: the first non-empty `code`, else `claim` (newer welshman's RoomJoin
/// setClaim), so that a join carrying a code anywhere is withheld (request_event_kept).
std::string join_code(const event& ev) {
  for (std::string_view name : {"code", "claim"})
    for (const auto& t : ev.tags)
      if (t.size() >= 2 && t[0] == name && !t[1].empty())
        return t[1];
  return {};
}

std::optional<std::string> optional_value(const event& ev, std::string_view name) {
  if (const std::string* value = first_tag_value(ev, name))
    return *value;
  return std::nullopt;
}

std::optional<room_action> action_of(std::uint32_t kind) {
  switch (kind) {
    case room_put_user_kind: return room_action::put_user;
    case room_remove_user_kind: return room_action::remove_user;
    case room_edit_metadata_kind: return room_action::edit_metadata;
    case room_delete_event_kind: return room_action::delete_event;
    case room_create_kind: return room_action::create_room;
    case room_delete_kind: return room_action::delete_room;
    case room_create_invite_kind: return room_action::create_invite;
    case room_join_kind: return room_action::join;
    case room_leave_kind: return room_action::leave;
    case room_pin_list_kind: return room_action::update_pins;
    default: return std::nullopt;
  }
}

/// An `e` with an event id, or an `a` with `<kind>:<pubkey>:<d>`.
bool valid_pin(const tag& t) {
  if (t.size() < 2)
    return false;
  if (t[0] == "e")
    return array_from_hex<32>(t[1]).has_value();
  if (t[0] != "a" || t[1].size() > 512)
    return false;
  auto colon = t[1].find(':');
  return colon != std::string::npos && colon > 0
         && std::all_of(t[1].begin(), t[1].begin() + static_cast<std::ptrdiff_t>(colon),
                        [](char c) { return c >= '0' && c <= '9'; })
         && array_from_hex<32>(t[1].substr(colon + 1, 64)).has_value()
         && t[1].size() > colon + 65 && t[1][colon + 65] == ':';
}

/// 9010: every `e` and `a` tag, in order, as just the reference; none clears the pins.
std::optional<rejection> read_pins(const event& ev, room_request& request) {
  for (const auto& t : ev.tags) {
    if (t.empty() || (t[0] != "e" && t[0] != "a"))
      continue;
    if (!valid_pin(t))
      return invalid("pins are e tags with an event id or a tags with <kind>:<pubkey>:<d>");
    request.pins.push_back({t[0], t[1]});
  }
  if (request.pins.size() > max_room_pins)
    return invalid("at most " + std::to_string(max_room_pins) + " pinned events per room");
  return std::nullopt;
}

/// The arguments each kind needs, from its tags.
std::optional<rejection> read_arguments(const event& ev, room_request& request) {
  switch (request.action) {
    case room_action::put_user:
    case room_action::remove_user: {
      auto subject = named_user(ev);
      if (!subject)
        return subject.error();
      request.subject = subject.value();
      // The same user named twice must be given the same roles: applying one tag's would leave
      // the stored event claiming the other's.
      bool first = true;
      for (const auto& t : ev.tags) {
        if (t.size() < 2 || t[0] != "p")
          continue;
        std::vector<std::string> roles(t.begin() + 2, t.end());
        std::erase_if(roles, [](const std::string& role) { return role.empty(); });
        if (!first && roles != request.roles)
          return invalid("one user per request: every p tag must name the same hex pubkey and roles");
        request.roles = std::move(roles);
        first = false;
      }
      if (request.roles.size() > max_roles_per_member
          || !std::all_of(request.roles.begin(), request.roles.end(), valid_role_name))
        return invalid("at most 8 roles, each 1 to 32 letters, digits, '-' or '_'");
      return std::nullopt;
    }
    case room_action::edit_metadata:
      request.name = optional_value(ev, "name");
      request.about = optional_value(ev, "about");
      request.picture = optional_value(ev, "picture");
      request.flags = {has_flag(ev, "private"), has_flag(ev, "restricted"), has_flag(ev, "hidden"),
                       has_flag(ev, "closed")};
      return std::nullopt;
    case room_action::delete_event:
      for (const auto& t : ev.tags)
        if (t.size() >= 2 && t[0] == "e")
          if (auto id = array_from_hex<32>(t[1]))
            request.targets.push_back(*id);
      if (request.targets.empty())
        return invalid("an e tag with the id of the event to delete is required");
      return std::nullopt;
    case room_action::create_invite:
      request.code = optional_value(ev, "code").value_or("");
      if (request.code.empty() || request.code.size() > 256)
        return invalid("a code tag (1 to 256 bytes) is required");
      return std::nullopt;
    case room_action::join:
      request.code = join_code(ev);
      return std::nullopt;
    case room_action::update_pins:
      return read_pins(ev, request);
    default:
      return std::nullopt;
  }
}

/// The value of a rendered tag starting at `start` (after its `["<name>","`), when it holds no
/// escape (room ids never do).
std::optional<std::string> rendered_value(std::string_view json, std::size_t start) {
  auto end = json.find('"', start);
  if (end == std::string_view::npos)
    return std::nullopt;
  auto value = json.substr(start, end - start);
  if (value.find('\\') != std::string_view::npos)
    return std::nullopt;
  return std::string(value);
}

} // namespace

std::optional<std::uint32_t> rendered_kind(std::string_view json) {
  constexpr std::string_view marker = "\"kind\":";
  auto at = json.find(marker);
  if (at == std::string_view::npos)
    return std::nullopt;
  std::uint32_t kind = 0;
  const char* begin = json.data() + at + marker.size();
  auto [end, ec] = std::from_chars(begin, json.data() + json.size(), kind);
  if (ec != std::errc{})
    return std::nullopt;
  return kind;
}

bool is_room_request_kind(std::uint32_t kind) noexcept {
  return (kind >= 9000 && kind <= 9020) || kind == room_join_kind || kind == room_leave_kind;
}

bool is_room_state_kind(std::uint32_t kind) noexcept {
  return kind >= 39000 && kind <= 39005;
}

bool valid_room_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > max_room_id_bytes)
    return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return id_char(c) || c == '.'; });
}

std::optional<std::string> too_many_rooms(const event& ev) {
  const auto room_tags = std::ranges::count_if(ev.tags, [](const auto& t) { return t.size() >= 2 && t[0] == "h"; });
  if (static_cast<std::size_t>(room_tags) > max_rooms_per_event)
    return "an event names at most " + std::to_string(max_rooms_per_event) + " rooms (h tags)";
  // A deletion's addresses are its author's own, each already read as a deletion target and
  // bounded as one (max_deletion_targets); the rooms it borrows past the bound are the "carried
  // out, not kept" path's (storage/store_plan.cpp), not a refusal.
  auto addresses = ev.kind == deletion_kind ? std::vector<std::string_view>{} : referent_addresses(ev);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  if (addresses.size() > max_referent_addresses)
    return ev.kind == comment_kind
             ? "a comment names at most " + std::to_string(max_referent_addresses) + " roots by address (A tags)"
             : "an event without a room names at most " + std::to_string(max_referent_addresses)
                 + " addresses (a tags)";
  return std::nullopt;
}

const std::string* room_of(const event& ev) noexcept {
  return first_tag_value(ev, "h");
}

std::optional<rendered_rooms> rooms_of_rendered(std::string_view json) {
  auto kind = rendered_kind(json);
  if (!kind)
    return std::nullopt;
  auto tags_at = json.find("\"tags\":");
  if (tags_at == std::string_view::npos)
    return std::nullopt;
  auto tags = json.substr(tags_at);
  bool state = is_room_state_kind(*kind);
  std::string_view marker = state ? "[\"d\",\"" : "[\"h\",\"";
  rendered_rooms out{{}, *kind, {}};
  for (auto at = tags.find(marker); at != std::string_view::npos; at = tags.find(marker, at + 1)) {
    if (auto room = rendered_value(tags, at + marker.size()))
      out.rooms.push_back(std::move(*room));
    if (state) // the first `d` names the address
      break;
  }
  if (out.rooms.empty())
    return std::nullopt;
  if (shown_to_named(*kind)) {
    constexpr std::string_view p_marker = "[\"p\",\"";
    for (auto at = tags.find(p_marker); at != std::string_view::npos; at = tags.find(p_marker, at + 1))
      if (auto person = rendered_value(tags, at + p_marker.size()))
        out.named.push_back(std::move(*person));
  }
  return out;
}

bool keeps_rooms_of_replaced(std::uint32_t kind) noexcept {
  return classify(kind) == kind_class::addressable && !is_room_state_kind(kind);
}

bool may_carry_borrowed_rooms(std::uint32_t kind) noexcept {
  return borrows_rooms(kind) || keeps_rooms_of_replaced(kind);
}

bool may_match_borrower(const filter& f) noexcept {
  if (!f.kinds)
    return true;
  return std::ranges::any_of(*f.kinds, may_carry_borrowed_rooms);
}

std::vector<bytes32> room_referents(const event& ev) {
  if (room_of(ev))
    return {};
  return thread_referents(ev);
}

std::vector<std::string_view> referent_addresses(const event& ev) {
  std::vector<std::string_view> addresses;
  const bool comment = ev.kind == comment_kind;
  if (!borrows_rooms(ev.kind) || (!comment && room_of(ev)))
    return addresses;
  const std::string_view address_tag = comment ? "A" : "a";
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == address_tag && names_room_address(t[1]))
      addresses.push_back(t[1]);
  return addresses;
}

bool borrows_from_referents(const event& ev) {
  return borrows_rooms(ev.kind) && !room_of(ev) && (!room_referents(ev).empty() || !referent_addresses(ev).empty());
}

std::vector<bytes32> thread_referents(const event& ev) {
  if (!borrows_rooms(ev.kind))
    return {};
  const std::string_view referent_tag = ev.kind == comment_kind ? "E" : "e";
  std::vector<bytes32> ids;
  for (const auto& t : ev.tags) {
    bytes32 id{};
    if (t.size() >= 2 && t[0] == referent_tag && decode_lower_hex(t[1], id))
      ids.push_back(id);
  }
  return ids;
}

bool names_in_room_change(const event& ev, const bytes32& pubkey) {
  if (!shown_to_named(ev.kind))
    return false;
  return std::any_of(ev.tags.begin(), ev.tags.end(), [&](const tag& t) {
    bytes32 named{};
    return t.size() >= 2 && t[0] == "p" && decode_lower_hex(t[1], named) && named == pubkey;
  });
}

std::vector<std::string> rooms_of_event(const event& ev) {
  if (is_room_state_kind(ev.kind))
    return {std::string(d_tag(ev))};
  std::vector<std::string> rooms;
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == "h")
      rooms.push_back(t[1]);
  return rooms;
}

result<bytes32> named_user(const event& ev) {
  const std::string* p = first_tag_value(ev, "p");
  auto pubkey = p ? array_from_hex<32>(*p) : std::nullopt;
  if (!pubkey)
    return invalid("a p tag with the user's hex pubkey is required");
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == "p" && array_from_hex<32>(t[1]) != pubkey)
      return invalid("one user per request: every p tag must name the same hex pubkey");
  return *pubkey;
}

result<room_request> parse_room_request(const event& ev) {
  auto action = action_of(ev.kind);
  if (!action)
    return invalid("kind " + std::to_string(ev.kind) + " is not a room request this relay handles");
  const std::string* room = room_of(ev);
  if (!room)
    return invalid("an h tag naming the room is required");
  if (!valid_room_id(*room))
    return invalid("room ids are 1 to 64 letters, digits, '-', '_' or '.'");
  // The request is stored under every `h` it carries, and read by those rooms' members: a second
  // room would take, unchecked, what only the first allowed.
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == "h" && t[1] != *room)
      return invalid("a room request names one room (one h tag)");
  // Flotilla's general chat of a space: the community itself, never a room of its own.
  if (*room == "_" && *action == room_action::create_room)
    return invalid("the room \"_\" is the community's general chat");
  room_request request;
  request.action = *action;
  request.room = *room;
  request.author = ev.pubkey;
  request.subject = ev.pubkey;
  if (auto bad = read_arguments(ev, request))
    return *bad;
  return request;
}

std::optional<rejection> check_room_time(const event& ev, std::int64_t now,
                                         std::int64_t late_seconds) {
  if (!room_of(ev) || ev.created_at >= now - late_seconds)
    return std::nullopt;
  return invalid("room events must be published within " + std::to_string(late_seconds)
                 + " seconds of their created_at");
}

} // namespace comb::protocol
