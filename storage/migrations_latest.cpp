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
// the index so the read visits no heap on vacuumed pages. A read by tag no longer drops a tag row
// whose event is gone, so there must be none: those left by a hand edit go first, and a tag row
// inserted without its event is refused. An event row is never updated by the relay (it is
// deleted and inserted again, with its tag rows); the copies follow a hand edit all the same, its
// tag rows found as its deletion finds them. Rows inserted without copies (the relay's writers
// other than the batch COPY, a pod of an older release during a rolling upgrade) get them from
// their event row, which each writer inserts first in the same transaction.
// `events` is locked before `event_tags`, in the order every writer takes them: a batch of an
// older pod between its two COPYs then finishes first instead of deadlocking with the migration.
// Reads by tag and writes of events wait for the rewrite of event_tags and its index: about half a
// minute per million tag rows (9 s for the 300,000 of a 100,000-event store on a 2-core VM).
constexpr const char* migration_49 = R"sql(
LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE event_tags IN ACCESS EXCLUSIVE MODE;
DELETE FROM event_tags t
 WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.community_id = t.community_id AND e.id = t.event_id);
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
  IF NOT FOUND THEN
    RAISE EXCEPTION 'a tag row of community % names no stored event', NEW.community_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER event_tag_copies BEFORE INSERT ON event_tags FOR EACH ROW
  WHEN (NEW.version IS NULL) EXECUTE FUNCTION comb_event_tag_copies();

CREATE OR REPLACE FUNCTION comb_event_edited() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  doc TEXT := OLD.raw;
  row_version BIGINT := (SELECT e.xmin::text::bigint FROM events e
                      WHERE e.community_id = NEW.community_id AND e.id = NEW.id);
BEGIN
  IF OLD.kind = 13534 THEN
    RETURN NULL; -- a NIP-43 member list has no tag rows
  END IF;
  IF strpos(doc, '\u0000') > 0 THEN
    doc := regexp_replace(doc, '(?<=(?:^|[^\\])(?:\\\\)*)\\u0000', '\\ufffd', 'g');
  END IF;
  UPDATE event_tags tag_row SET pubkey = NEW.pubkey, expires_at = NEW.expires_at,
         size = octet_length(NEW.raw), version = row_version
    FROM (SELECT DISTINCT t ->> 0 AS name, t ->> 1 AS value
            FROM json_array_elements(doc::json -> 'tags') AS t
           WHERE json_typeof(t) = 'array' AND length(t ->> 0) = 1 AND t ->> 1 IS NOT NULL) AS tag
   WHERE tag_row.community_id = OLD.community_id AND tag_row.name = tag.name AND tag_row.value = tag.value
     AND tag_row.created_at = OLD.created_at AND tag_row.event_id = OLD.id;
  UPDATE event_tags SET pubkey = NEW.pubkey, expires_at = NEW.expires_at,
         size = octet_length(NEW.raw), version = row_version
   WHERE community_id = OLD.community_id AND event_id = OLD.id AND name = 'room';
  RETURN NULL;
END $$;
CREATE TRIGGER event_edited AFTER UPDATE ON events FOR EACH ROW EXECUTE FUNCTION comb_event_edited();

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
