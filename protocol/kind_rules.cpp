// SPDX-License-Identifier: MIT
#include "protocol/kind_rules.hpp"
#include "protocol/hex.hpp"
#include "protocol/room.hpp"

#include <algorithm>
#include <boost/json.hpp>

namespace comb::protocol {

bool relay_signed_kind(std::uint32_t kind) noexcept {
  return kind == 13534 || kind == 8000 || kind == 8001 || kind == 28935 || kind == 33534
         || is_room_state_kind(kind);
}

bool relay_only_kind(std::uint32_t kind) noexcept {
  return relay_signed_kind(kind) || kind == room_creation_grant_kind;
}

bool state_request_kind(std::uint32_t kind) noexcept {
  return kind == 28934 || kind == 28936 || (kind >= 9000 && kind <= 9022)
         || (kind >= 9030 && kind <= 9032);
}

std::size_t deletion_targets(const event& ev) noexcept {
  return static_cast<std::size_t>(std::count_if(ev.tags.begin(), ev.tags.end(), [](const auto& t) {
    return t.size() >= 2 && (t[0] == "e" || t[0] == "a");
  }));
}

bool reposts_protected_event(const event& ev) {
  if ((ev.kind != 6 && ev.kind != 16) || ev.content.empty())
    return false;
  boost::system::error_code ec;
  auto embedded = boost::json::parse(ev.content, ec);
  const auto* object = ec ? nullptr : embedded.if_object();
  if (!object)
    return false;
  const auto* author = object->if_contains("pubkey");
  if (author && author->is_string() && author->get_string() == to_hex(ev.pubkey))
    return false; // its author reposting it
  const auto* tags = object->if_contains("tags");
  if (!tags || !tags->is_array())
    return false;
  return std::ranges::any_of(tags->get_array(), [](const boost::json::value& element) {
    const auto* t = element.if_array();
    return t && !t->empty() && t->front().is_string() && t->front().get_string() == "-";
  });
}

} // namespace comb::protocol
