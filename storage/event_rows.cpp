// SPDX-License-Identifier: MIT
#include "storage/event_rows.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "protocol/sha256.hpp"

namespace comb::storage {
namespace {

std::int64_t key_from_digest(const protocol::bytes32& digest) {
  std::int64_t key = 0;
  std::memcpy(&key, digest.data(), sizeof key);
  return key;
}

} // namespace

bool is_indexable_tag_value(std::string_view value) noexcept {
  return value.size() <= max_indexed_tag_value_bytes
         && value.find('\0') == std::string_view::npos;
}

std::string address_key(std::string_view d) {
  if (is_indexable_tag_value(d))
    return std::string(d);
  return "\x01sha256:" + protocol::to_hex(protocol::sha256(d));
}

std::optional<address> address_of_event(std::int64_t community_id, const protocol::event& ev) {
  switch (protocol::classify(ev.kind)) {
  case protocol::kind_class::replaceable:
    return address{community_id, ev.pubkey, ev.kind, ""};
  case protocol::kind_class::addressable:
    return address{community_id, ev.pubkey, ev.kind, address_key(protocol::d_tag(ev))};
  default:
    return std::nullopt;
  }
}

std::optional<address> parse_a_tag(std::int64_t community_id, std::string_view value) {
  auto named = protocol::parse_address_value(value);
  if (!named || !protocol::has_address(named->kind))
    return std::nullopt;
  if (protocol::classify(named->kind) == protocol::kind_class::replaceable && !named->d.empty())
    return std::nullopt;
  return address{community_id, named->pubkey, named->kind, address_key(named->d)};
}

std::vector<std::pair<char, std::string>> indexed_tags(const protocol::event& ev) {
  std::set<std::pair<char, std::string>> unique;
  for (const auto& t : ev.tags) {
    if (t.size() < 2 || t[0].size() != 1 || !std::isalpha(static_cast<unsigned char>(t[0][0])))
      continue;
    if (is_indexable_tag_value(t[1]))
      unique.emplace(t[0][0], t[1]);
  }
  return {unique.begin(), unique.end()};
}

namespace {

std::vector<protocol::bytes32> ids_in_tags(const protocol::event& ev, bool a_values_too) {
  std::vector<protocol::bytes32> ids;
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && (t[0] == "e" || (a_values_too && t[0] == "a")))
      if (auto id = protocol::array_from_hex<32>(t[1]))
        ids.push_back(*id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

} // namespace

std::vector<protocol::bytes32> e_tag_ids(const protocol::event& ev) {
  return ids_in_tags(ev, false);
}

std::vector<protocol::bytes32> deletion_named_ids(const protocol::event& ev) {
  return ids_in_tags(ev, true);
}

std::int64_t address_lock_key(const address& a) {
  std::string material = "comb address:" + std::to_string(a.community_id) + ':';
  protocol::append_hex(material, a.pubkey);
  material += ':' + std::to_string(a.kind) + ':';
  material += a.d_key;
  return key_from_digest(protocol::sha256(material));
}

std::int64_t community_lock_key(std::int64_t community_id) {
  return key_from_digest(protocol::sha256("comb community:" + std::to_string(community_id)));
}

} // namespace comb::storage
