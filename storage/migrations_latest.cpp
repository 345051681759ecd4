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

// A history read driven by one tag value (`#e` with one id: the replies to a note) answers from
// event_tags_value alone, without a probe of `events` per row: three quarters of such a read's
// Postgres time (issue 16, docs/benchmarks.md) went to that join, for the few columns each row
// is checked and sized with: its author (bans), its expiry, its JSON's length and its row version
// (`xmin`, what the readers' body cache keys on). Each tag row keeps a copy of them, carried in
// the index so the read visits no heap on vacuumed pages. An event row is never updated by the
// relay (it is deleted and inserted again, with its tag rows); the copies follow a hand edit of
// events all the same. Rows inserted without them (the relay's own writers other than the batch
// COPY, a pod of an older release during a rolling upgrade) get them from their event row, which
// each writer inserts first in the same transaction.
constexpr const char* migration_49 = R"sql(
ALTER TABLE event_tags ADD COLUMN pubkey BYTEA, ADD COLUMN expires_at BIGINT,
  ADD COLUMN size INTEGER, ADD COLUMN version BIGINT;
UPDATE event_tags t SET pubkey = e.pubkey, expires_at = e.expires_at, size = octet_length(e.raw),
       version = e.xmin::text::bigint
  FROM events e WHERE e.community_id = t.community_id AND e.id = t.event_id;

CREATE OR REPLACE FUNCTION comb_event_tag_copies() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT e.pubkey, e.expires_at, octet_length(e.raw), e.xmin::text::bigint
    INTO NEW.pubkey, NEW.expires_at, NEW.size, NEW.version
    FROM events e WHERE e.community_id = NEW.community_id AND e.id = NEW.event_id;
  RETURN NEW;
END $$;
CREATE TRIGGER event_tag_copies BEFORE INSERT ON event_tags FOR EACH ROW
  WHEN (NEW.version IS NULL) EXECUTE FUNCTION comb_event_tag_copies();

CREATE OR REPLACE FUNCTION comb_event_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE event_tags SET pubkey = NEW.pubkey, expires_at = NEW.expires_at,
         size = octet_length(NEW.raw),
         version = (SELECT e.xmin::text::bigint FROM events e
                     WHERE e.community_id = NEW.community_id AND e.id = NEW.id)
   WHERE community_id = NEW.community_id AND event_id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER event_edited AFTER UPDATE OF pubkey, expires_at, raw ON events FOR EACH ROW
  WHEN (OLD.pubkey IS DISTINCT FROM NEW.pubkey OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
        OR OLD.raw IS DISTINCT FROM NEW.raw)
  EXECUTE FUNCTION comb_event_edited();

CREATE INDEX event_tags_value_copies ON event_tags (community_id, name, value, created_at DESC)
  INCLUDE (event_id, kind, pubkey, expires_at, size, version);
DROP INDEX event_tags_value;
ALTER INDEX event_tags_value_copies RENAME TO event_tags_value;
)sql";

constexpr migration migrations[] = {
  {48, "deletions, pins and other borrowers borrow the rooms of what they name by address", migration_48},
  {49, "tag rows carry what a read by tag checks of their event, so it reads no event row", migration_49},
};

} // namespace

std::span<const migration> latest_migrations() noexcept {
  return migrations;
}

} // namespace comb::storage
