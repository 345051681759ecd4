// SPDX-License-Identifier: MIT
#include "storage/batch_rows.hpp"

#include <algorithm>
#include <tuple>

#include "protocol/canonical_json.hpp"
#include "storage/event_rows.hpp"
#include "storage/pg_array.hpp"

namespace comb::storage {
namespace {

/// What each of an event's tag rows copies of its event row (migration 49): what a read by tag
/// checks and sizes the event by, without reading the event row.
struct event_copies {
  std::int64_t community_id = 0;
  const protocol::event* ev = nullptr;
  std::optional<std::int64_t> expires_at;
  std::int32_t size = 0; ///< the bytes of its JSON as stored (event_rows)
  std::uint32_t version = 0;
};

event_copies copies_of(const event_write& w, std::uint32_t transaction) {
  const std::size_t size = w.json ? w.json->size() : protocol::render_event_json(*w.ev).size();
  return {w.community_id, w.ev.get(), protocol::expiration_of(*w.ev), static_cast<std::int32_t>(size),
          transaction};
}

void add_tag_row(pg_copy_rows& rows, const event_copies& of, std::string_view name, std::string_view value) {
  rows.row();
  rows.add_int8(of.community_id);
  rows.add_bytes(of.ev->id);
  rows.add_bytes(name);
  rows.add_bytes(value);
  rows.add_int8(of.ev->created_at);
  rows.add_int4(static_cast<std::int32_t>(of.ev->kind));
  rows.add_bytes(of.ev->pubkey);
  if (of.expires_at)
    rows.add_int8(*of.expires_at);
  else
    rows.add_null();
  rows.add_int4(of.size);
  rows.add_int8(of.version);
}

} // namespace

std::string event_rows(std::span<const event_write> writes, const std::vector<std::size_t>& inserts) {
  std::vector<std::size_t> ordered = inserts;
  std::sort(ordered.begin(), ordered.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(writes[a].community_id, writes[a].ev->id)
           < std::tie(writes[b].community_id, writes[b].ev->id);
  });
  pg_copy_rows rows(8);
  for (std::size_t index : ordered) {
    const event_write& w = writes[index];
    const protocol::event& ev = *w.ev;
    rows.row();
    rows.add_int8(w.community_id);
    rows.add_bytes(ev.id);
    rows.add_bytes(ev.pubkey);
    rows.add_int8(ev.created_at);
    rows.add_int4(static_cast<std::int32_t>(ev.kind));
    if (auto addr = address_of_event(w.community_id, ev))
      rows.add_bytes(std::string_view(addr->d_key));
    else
      rows.add_null();
    if (auto expiry = protocol::expiration_of(ev))
      rows.add_int8(*expiry);
    else
      rows.add_null();
    if (w.json)
      rows.add_bytes(std::string_view(*w.json));
    else
      rows.add_bytes(std::string_view(protocol::render_event_json(ev)));
  }
  return rows.str();
}

std::optional<std::string> tag_rows(std::span<const event_write> writes, const store_plan& plan,
                                    std::uint32_t transaction) {
  pg_copy_rows rows(10);
  for (std::size_t index : plan.inserts) {
    const event_write& w = writes[index];
    const auto tags = indexed_tags(*w.ev);
    const auto& rooms = plan.outcomes[index].borrowed_rooms;
    if (tags.empty() && (!rooms || rooms->empty()))
      continue;
    const event_copies copies = copies_of(w, transaction);
    for (const auto& [tag_name, tag_value] : tags)
      add_tag_row(rows, copies, std::string_view(&tag_name, 1), tag_value);
    if (rooms)
      for (const auto& room : *rooms)
        add_tag_row(rows, copies, borrowed_room_tag, room);
  }
  if (rows.rows() == 0)
    return std::nullopt;
  return rows.str();
}

} // namespace comb::storage
