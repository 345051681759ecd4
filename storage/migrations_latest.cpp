// SPDX-License-Identifier: MIT
// Migrations 48 on. Released migrations are never edited: a fix is a new migration.
#include "storage/migration_parts.hpp"

namespace comb::storage {
namespace {

// A borrower without an `h` (a deletion, a pin, a reaction, a report, a vote, a zap receipt)
// that names what it refers to by address (`a`) borrows the rooms of that address's live version
// (protocol::referent_addresses), as a comment's `A` does (migration 43): a private room's
// calendar event deleted by its address showed that address to the community. Those stored
// before get the rows they would get now, from the address's live version where one is left: a
// deletion stored before whose target is gone (most are) stays as it was, with no rooms; one
// whose address holds a version again gets that version's. Each version's `h` and `room` rows
// are probed apart, one partial index each (event_tags_room, event_tags_comment_room). The
// trigger that deletes borrowed rooms already covers these kinds (migrations 46, 47).
constexpr const char* migration_48 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT c.community_id, c.event_id, 'room', h.value, c.created_at, c.kind
  FROM event_tags c
  CROSS JOIN LATERAL (SELECT c.value ~ '^3[0-9]{4}:[0-9a-f]{64}:' AS named) f
  CROSS JOIN LATERAL (SELECT CASE WHEN f.named THEN split_part(c.value, ':', 1)::int END AS kind,
                             CASE WHEN f.named THEN decode(substr(c.value, 7, 64), 'hex') END AS pubkey,
                             substr(c.value, 72) AS d) a
  JOIN events v ON v.community_id = c.community_id AND v.pubkey = a.pubkey AND v.kind = a.kind
   AND v.d_tag = a.d
  CROSS JOIN LATERAL (SELECT value FROM event_tags WHERE community_id = v.community_id AND event_id = v.id
                       AND name = 'h'
                      UNION ALL SELECT value FROM event_tags WHERE community_id = v.community_id
                       AND event_id = v.id AND name = 'room') h
 WHERE c.kind IN (5, 7, 1018, 1984, 9735, 39067) AND c.name = 'a'
   AND a.kind NOT BETWEEN 39000 AND 39005
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = c.community_id
                   AND o.event_id = c.event_id AND o.name = 'h')
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = c.community_id
                   AND o.event_id = c.event_id AND o.name = 'room' AND o.value = h.value);
)sql";

constexpr migration migrations[] = {
  {48, "deletions, pins and other borrowers borrow the rooms of what they name by address", migration_48},
};

} // namespace

std::span<const migration> latest_migrations() noexcept {
  return migrations;
}

} // namespace comb::storage
