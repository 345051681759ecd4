// SPDX-License-Identifier: MIT
// Migrations 22 to 47: the store time for gap fills, hand edits that bump state versions, rooms
// borrowed by comments, reports, zaps, reactions and deletions, requests to vanish, room invite
// codes. Released migrations are never edited: a fix is a new migration.
#include "storage/migration_parts.hpp"

namespace comb::storage {
namespace {

// When each event was stored (Unix seconds, the storing transaction's start; NULL for events
// stored before this migration), for the bridge's gap fill: after a pod lost Redis or a cluster
// peer, it hands its subscribers the events stored meanwhile, whatever their created_at (a
// client may publish an event created an hour ago; selecting by created_at missed it). The
// default fills it on every insert path, COPY included; a BRIN index (32 pages, some 250 events,
// per range) finds the recent rows (new rows go to the table's end) at almost no cost per
// insert, where a btree would be one more index entry per event.
// Deleting a community deletes its tag rows in one range first (migration 21), so each of its
// events' own trigger would then parse the event's `raw` and probe for rows already gone: a
// few thousand events cost a JSON parse and a probe per tag each. The community's trigger says
// which community it is deleting, for this transaction only (set_config's is_local), and the
// events' trigger returns at once for that community's rows.
constexpr const char* migration_22 = R"sql(
ALTER TABLE events ADD COLUMN stored_at BIGINT;
ALTER TABLE events ALTER COLUMN stored_at SET DEFAULT floor(extract(epoch FROM now()))::bigint;
CREATE INDEX events_stored ON events USING brin (stored_at) WITH (pages_per_range = 32);

CREATE OR REPLACE FUNCTION comb_event_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  doc TEXT := OLD.raw;
  tag RECORD;
BEGIN
  IF OLD.kind = 13534 THEN
    RETURN NULL; -- a NIP-43 member list: thousands of p tags, stored without tag rows
  END IF;
  IF current_setting('comb.deleting_community', true) = OLD.community_id::text THEN
    RETURN NULL; -- comb_community_deleted deleted the community's tag rows in one range
  END IF;
  IF strpos(doc, '\u0000') > 0 THEN
    doc := regexp_replace(doc, '(?<=(?:^|[^\\])(?:\\\\)*)\\u0000', '\\ufffd', 'g');
  END IF;
  FOR tag IN
    SELECT DISTINCT t ->> 0 AS name, t ->> 1 AS value
      FROM json_array_elements(doc::json -> 'tags') AS t
     WHERE json_typeof(t) = 'array'
  LOOP
    CONTINUE WHEN length(tag.name) IS DISTINCT FROM 1 OR tag.value IS NULL;
    DELETE FROM event_tags WHERE community_id = OLD.community_id AND name = tag.name
       AND value = tag.value AND created_at = OLD.created_at AND event_id = OLD.id;
  END LOOP;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION comb_community_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('comb.deleting_community', OLD.id::text, true);
  DELETE FROM event_tags WHERE community_id = OLD.id;
  DELETE FROM events WHERE community_id = OLD.id; -- their row triggers fire before the next line
  PERFORM set_config('comb.deleting_community', '', true);
  RETURN NULL;
END $$;
)sql";

// A user may hold a bounded number of open invites (membership_store::mint_invite counts them
// at every mint).
constexpr const char* migration_23 = R"sql(
CREATE INDEX invites_creator ON invites (community_id, created_by, expires_at);
)sql";

// What a pod's access checks read is the community's access and archive state, its members, its
// bans and its rooms (storage::load_access); migration 6 bumped the version for hand edits of
// members only. Now a hand edit of any of them (an operator's UPDATE, a restore) bumps it too,
// so every pod reloads the community at its next version check instead of serving it as it was.
// A statement that changes no row bumps nothing, as before. A transaction bumps a community
// once however many statements it runs (a room restore writes member after member, and each
// bump left one more version of the community's row until the end of the transaction). The
// relay's own changes still bump once more in note_access_change, with the notification.
constexpr const char* migration_24 = R"sql(
CREATE OR REPLACE FUNCTION comb_members_touched() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  community BIGINT;
BEGIN
  FOR community IN SELECT DISTINCT community_id FROM touched LOOP
    IF coalesce(current_setting('comb.version_bumped_' || community, true), '') = '' THEN
      UPDATE communities SET state_version = state_version + 1 WHERE id = community;
      PERFORM set_config('comb.version_bumped_' || community, 'yes', true);
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

CREATE FUNCTION comb_access_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.state_version := GREATEST(NEW.state_version, OLD.state_version + 1);
  RETURN NEW;
END $$;

CREATE TRIGGER communities_access_edited BEFORE UPDATE OF access, archived_at ON communities
  FOR EACH ROW WHEN (OLD.access IS DISTINCT FROM NEW.access
                     OR OLD.archived_at IS DISTINCT FROM NEW.archived_at)
  EXECUTE FUNCTION comb_access_edited();

CREATE TRIGGER banned_pubkeys_inserted AFTER INSERT ON banned_pubkeys REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER banned_pubkeys_updated AFTER UPDATE ON banned_pubkeys REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER banned_pubkeys_deleted AFTER DELETE ON banned_pubkeys REFERENCING OLD TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER banned_events_inserted AFTER INSERT ON banned_events REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER banned_events_updated AFTER UPDATE ON banned_events REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER banned_events_deleted AFTER DELETE ON banned_events REFERENCING OLD TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER rooms_inserted AFTER INSERT ON rooms REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER rooms_updated AFTER UPDATE ON rooms REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER rooms_deleted AFTER DELETE ON rooms REFERENCING OLD TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER room_members_inserted AFTER INSERT ON room_members REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER room_members_updated AFTER UPDATE ON room_members REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER room_members_deleted AFTER DELETE ON room_members REFERENCING OLD TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
)sql";

// TRUNCATE fires no row or statement trigger of the tables above and has no transition table:
// every community is bumped, since which ones lost rows is not known.
constexpr const char* migration_25 = R"sql(
CREATE FUNCTION comb_access_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE communities SET state_version = state_version + 1;
  RETURN NULL;
END $$;

CREATE TRIGGER members_truncated AFTER TRUNCATE ON members
  FOR EACH STATEMENT EXECUTE FUNCTION comb_access_truncated();
CREATE TRIGGER banned_pubkeys_truncated AFTER TRUNCATE ON banned_pubkeys
  FOR EACH STATEMENT EXECUTE FUNCTION comb_access_truncated();
CREATE TRIGGER banned_events_truncated AFTER TRUNCATE ON banned_events
  FOR EACH STATEMENT EXECUTE FUNCTION comb_access_truncated();
CREATE TRIGGER rooms_truncated AFTER TRUNCATE ON rooms
  FOR EACH STATEMENT EXECUTE FUNCTION comb_access_truncated();
CREATE TRIGGER room_members_truncated AFTER TRUNCATE ON room_members
  FOR EACH STATEMENT EXECUTE FUNCTION comb_access_truncated();
)sql";

// NIP-22 comments stored before their rooms were (batch_sql.cpp `insert_tags`): a 1111 with no
// `h` of its own gets a `room` row for each `h` of each event its `E` tags name
// (protocol::room_referents), so the readers' room rules hide it as they hide its thread.
constexpr const char* migration_26 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT c.community_id, c.event_id, 'room', r.value, c.created_at, c.kind
  FROM event_tags c
  JOIN event_tags r ON r.community_id = c.community_id AND r.name = 'h'
   AND r.event_id = CASE WHEN c.value ~ '^[0-9a-f]{64}$' THEN decode(c.value, 'hex') END
 WHERE c.kind = 1111 AND c.name = 'E'
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = c.community_id
                   AND o.event_id = c.event_id AND o.name IN ('h', 'room'));
)sql";

// A comment's `room` rows are not among its tags, which comb_event_deleted deletes by the values
// in `raw`: a trigger of their own deletes them with the comment (a kind 5, an expiry, a room
// deletion), found by the comment's id in an index of those rows only.
constexpr const char* migration_27 = R"sql(
CREATE INDEX event_tags_comment_room ON event_tags (community_id, event_id) WHERE name = 'room';
DELETE FROM event_tags t WHERE t.name = 'room' AND NOT EXISTS
  (SELECT 1 FROM events e WHERE e.community_id = t.community_id AND e.id = t.event_id);

CREATE FUNCTION comb_comment_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM event_tags WHERE community_id = OLD.community_id AND event_id = OLD.id AND name = 'room';
  RETURN NULL;
END $$;

CREATE TRIGGER comments_deleted_rooms AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind = 1111) EXECUTE FUNCTION comb_comment_deleted();
)sql";

// NIP-56 reports borrow the rooms of what they report, as comments borrow their thread's
// (protocol::room_referents): a report with no `h` of its own gets a `room` row for each `h` of
// each event its `e` tags name, and those rows go with it like a comment's.
constexpr const char* migration_28 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT r.community_id, r.event_id, 'room', h.value, r.created_at, r.kind
  FROM event_tags r
  JOIN event_tags h ON h.community_id = r.community_id AND h.name = 'h'
   AND h.event_id = CASE WHEN r.value ~ '^[0-9a-f]{64}$' THEN decode(r.value, 'hex') END
 WHERE r.kind = 1984 AND r.name = 'e'
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = r.community_id
                   AND o.event_id = r.event_id AND o.name IN ('h', 'room'));

CREATE FUNCTION comb_borrowed_rooms_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM event_tags WHERE community_id = OLD.community_id AND event_id = OLD.id AND name = 'room';
  RETURN NULL;
END $$;

DROP TRIGGER comments_deleted_rooms ON events;
DROP FUNCTION comb_comment_deleted();
CREATE TRIGGER borrowed_rooms_deleted AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind IN (1111, 1984)) EXECUTE FUNCTION comb_borrowed_rooms_deleted();
)sql";

// NIP-62: who asked to vanish from a community, and up to when: their events up to then were
// deleted, and store_plan refuses them ever after (batch_sql.cpp reads it for each author).
constexpr const char* migration_29 = R"sql(
CREATE TABLE vanished (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  pubkey BYTEA NOT NULL,
  until BIGINT NOT NULL,
  request_id BYTEA NOT NULL,
  requested_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, pubkey)
);
)sql";

// A request to vanish is kept as it was signed, so that an export carries it (after the events)
// and an import into another database draws the same line (storage/event_export.cpp).
constexpr const char* migration_30 = R"sql(
ALTER TABLE vanished ADD COLUMN request TEXT NULL;
)sql";

// Joins that carried an invite code (`["code", …]` in `raw`, which comb renders compact, so
// the pattern can only be a tag) are no longer stored: those stored before showed the code to
// every reader of the room (protocol::request_event_kept). Their tags go by trigger.
constexpr const char* migration_31 = R"sql(
DELETE FROM events WHERE kind = 9021 AND raw LIKE '%["code",%';
)sql";

// A room's invite code lives as long as the 9009 that created it: deleting that event (a 9005,
// a NIP-09 deletion, an event ban, the room's deletion) revokes the code, and its NIP-40
// `expiration` ends it (storage/room_store.cpp). Codes stored before are tied to their 9009 (the
// first `h` and `code` tags with a value, as the relay reads them; of several 9009s with one
// code, stored before a repeated code became a no-op, the one that lives longest). A code whose
// 9009 was deleted already was meant to be revoked, and is. A 9009 whose text holds a NUL
// escape, which Postgres's JSON functions refuse, is left unread (the migration must not fail on
// it): its code is revoked too, and an admin can issue it again.
constexpr const char* migration_32 = R"sql(
ALTER TABLE room_invites ADD COLUMN event_id BYTEA NULL, ADD COLUMN expires_at BIGINT NULL;

WITH created AS MATERIALIZED (
  SELECT community_id, id, expires_at, raw::json -> 'tags' AS tags FROM events
   WHERE kind = 9009 AND strpos(raw, '\u0000') = 0),
tied AS (
  SELECT DISTINCT ON (v.community_id, h.room, k.code_hash)
         v.community_id, h.room, k.code_hash, v.id, v.expires_at
    FROM created v
    CROSS JOIN LATERAL (SELECT t->>1 AS code FROM json_array_elements(v.tags) t
                         WHERE t->>0 = 'code'
                           AND CASE WHEN json_typeof(t) = 'array' THEN json_array_length(t) ELSE 0 END >= 2
                         LIMIT 1) c
    CROSS JOIN LATERAL (SELECT t->>1 AS room FROM json_array_elements(v.tags) t
                         WHERE t->>0 = 'h'
                           AND CASE WHEN json_typeof(t) = 'array' THEN json_array_length(t) ELSE 0 END >= 2
                         LIMIT 1) h
    CROSS JOIN LATERAL (SELECT encode(sha256(convert_to(btrim(c.code, E' \t\r\n'), 'UTF8')), 'hex')
                               AS code_hash) k
   ORDER BY v.community_id, h.room, k.code_hash, v.expires_at IS NULL DESC, v.expires_at DESC)
UPDATE room_invites i SET event_id = t.id, expires_at = t.expires_at
  FROM tied t
 WHERE t.community_id = i.community_id AND t.room = i.room_id AND t.code_hash = i.code_hash;

DELETE FROM room_invites WHERE event_id IS NULL;
CREATE INDEX room_invites_event ON room_invites (community_id, event_id);

CREATE FUNCTION comb_room_invite_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM room_invites WHERE community_id = OLD.community_id AND event_id = OLD.id;
  RETURN NULL;
END $$;

CREATE TRIGGER room_invites_revoked AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind = 9009) EXECUTE FUNCTION comb_room_invite_deleted();
)sql";

// Zap receipts borrow the rooms of what they zapped, as reports borrow those of what they report
// (protocol::borrower_kinds); and a referent's rooms may be borrowed themselves (a report of a
// comment). Receipts and reports stored before get the `room` rows they would get now, and those
// rows go with them.
constexpr const char* migration_33 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT r.community_id, r.event_id, 'room', h.value, r.created_at, r.kind
  FROM event_tags r
  JOIN event_tags h ON h.community_id = r.community_id AND h.name IN ('h', 'room')
   AND h.event_id = CASE WHEN r.value ~ '^[0-9a-f]{64}$' THEN decode(r.value, 'hex') END
 WHERE r.kind IN (1984, 9735) AND r.name = 'e'
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = r.community_id
                   AND o.event_id = r.event_id AND o.name IN ('h', 'room'));

DROP TRIGGER borrowed_rooms_deleted ON events;
CREATE TRIGGER borrowed_rooms_deleted AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind IN (1111, 1984, 9735)) EXECUTE FUNCTION comb_borrowed_rooms_deleted();
)sql";

// Reactions and deletions borrow the rooms of what they react to or delete
// (protocol::borrower_kinds): Flotilla's copy the `h` of their target, and a comment has none.
// Reactions stored before get the `room` rows they would get now (a deletion's targets are gone,
// so it gets none), and those rows go with them.
constexpr const char* migration_34 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT r.community_id, r.event_id, 'room', h.value, r.created_at, r.kind
  FROM event_tags r
  JOIN event_tags h ON h.community_id = r.community_id AND h.name IN ('h', 'room')
   AND h.event_id = CASE WHEN r.value ~ '^[0-9a-f]{64}$' THEN decode(r.value, 'hex') END
 WHERE r.kind = 7 AND r.name = 'e'
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = r.community_id
                   AND o.event_id = r.event_id AND o.name IN ('h', 'room'));

DROP TRIGGER borrowed_rooms_deleted ON events;
CREATE TRIGGER borrowed_rooms_deleted AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind IN (5, 7, 1111, 1984, 9735)) EXECUTE FUNCTION comb_borrowed_rooms_deleted();
)sql";

// An addressable event with no `h` that replaces one in rooms borrows them
// (protocol::keeps_rooms_of_replaced: Flotilla's calendar edit leaves the `h` out); its `room`
// rows go with it too. Nothing stored before borrowed this way.
constexpr const char* migration_35 = R"sql(
DROP TRIGGER borrowed_rooms_deleted ON events;
CREATE TRIGGER borrowed_rooms_deleted AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind IN (5, 7, 1111, 1984, 9735)
                     OR (OLD.kind BETWEEN 30000 AND 39999 AND OLD.kind NOT BETWEEN 39000 AND 39005))
  EXECUTE FUNCTION comb_borrowed_rooms_deleted();
)sql";

// welshman 0.8.1, which Flotilla 1.6.3 pins, hides whatever a stored kind 5 names, whoever signed
// it; comb now refuses a deletion naming another author's stored event, or another key in an `a`
// of any kind (now storage/store_plan.cpp names_other_keys, names_ids_not_its_own). Those
// stored before go: they deleted nothing of the others', and served, they hide it. Read per
// community (its kinds index); a kind 5 whose text holds a NUL escape, which Postgres's JSON
// functions refuse, is left unread.
constexpr const char* migration_36 = R"sql(
WITH deletions AS MATERIALIZED (
  SELECT e.community_id, e.id, e.pubkey, e.raw
    FROM communities c
    CROSS JOIN LATERAL (SELECT community_id, id, pubkey, raw FROM events
                         WHERE community_id = c.id AND kind = 5) e
   WHERE strpos(e.raw, '\u0000') = 0),
named AS (
  SELECT d.community_id, d.id, d.pubkey, t->>0 AS name, t->>1 AS value
    FROM deletions d
    CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(d.raw::json -> 'tags') = 'array'
                                                THEN d.raw::json -> 'tags' ELSE '[]'::json END) t
   WHERE CASE WHEN json_typeof(t) = 'array' THEN json_array_length(t) ELSE 0 END >= 2),
others AS (
  SELECT DISTINCT n.community_id, n.id FROM named n
   WHERE (n.name = 'e' AND EXISTS (
            SELECT 1 FROM events x WHERE x.community_id = n.community_id AND x.pubkey <> n.pubkey
               AND x.id = CASE WHEN n.value ~ '^[0-9a-f]{64}$' THEN decode(n.value, 'hex') END))
      OR (n.name = 'a' AND split_part(n.value, ':', 2) ~ '^[0-9a-f]{64}$'
          AND split_part(n.value, ':', 2) <> encode(n.pubkey, 'hex')))
DELETE FROM events v USING others o WHERE v.community_id = o.community_id AND v.id = o.id;
)sql";

// welshman 0.8.1 reads `e` and `a` values of a kind 5 alike: an address in an `e` or an id in an
// `a` hides as much as the forms migration 36 read (storage/store_plan.cpp names_other_keys
// refuses the one, names_ids_not_its_own keeps neither). Those stored before go too, and those
// migration 36 left unread: a NUL escape, which Postgres's JSON functions refuse as text, is
// read as a space (an escaped backslash before it stays one), so no value holding one reads as
// an id.
constexpr const char* migration_37 = R"sql(
WITH deletions AS MATERIALIZED (
  SELECT e.community_id, e.id, e.pubkey, replace(e.raw, '\u0000', '\u0020')::json -> 'tags' AS tags
    FROM communities c
    CROSS JOIN LATERAL (SELECT community_id, id, pubkey, raw FROM events
                         WHERE community_id = c.id AND kind = 5) e),
named AS (
  SELECT d.community_id, d.id, d.pubkey, t->>1 AS value
    FROM deletions d
    CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(d.tags) = 'array'
                                                THEN d.tags ELSE '[]'::json END) t
   WHERE CASE WHEN json_typeof(t) = 'array' THEN json_array_length(t) ELSE 0 END >= 2
     AND t->>0 IN ('e', 'a')),
others AS (
  SELECT DISTINCT n.community_id, n.id FROM named n
   WHERE EXISTS (SELECT 1 FROM events x WHERE x.community_id = n.community_id AND x.pubkey <> n.pubkey
                    AND x.id = CASE WHEN n.value ~ '^[0-9a-f]{64}$' THEN decode(n.value, 'hex') END)
      OR (split_part(n.value, ':', 2) ~ '^[0-9a-f]{64}$'
          AND split_part(n.value, ':', 2) <> encode(n.pubkey, 'hex')))
DELETE FROM events v USING others o WHERE v.community_id = o.community_id AND v.id = o.id;
)sql";

// Pods keep whether plain members may invite (their invite REQs are refused without a statement
// where they may not): a hand edit of it reaches them as an access edit does.
constexpr const char* migration_38 = R"sql(
DROP TRIGGER communities_access_edited ON communities;
CREATE TRIGGER communities_access_edited BEFORE UPDATE OF access, archived_at, members_may_invite ON communities
  FOR EACH ROW WHEN (OLD.access IS DISTINCT FROM NEW.access
                     OR OLD.archived_at IS DISTINCT FROM NEW.archived_at
                     OR OLD.members_may_invite IS DISTINCT FROM NEW.members_may_invite)
  EXECUTE FUNCTION comb_access_edited();
)sql";

// A host removed or moved by hand (comb-admin only adds them): the community that had it, and
// the one it moved to, change version and notify as an access change that wrote no events does,
// so every pod forgets its cached answers for hosts at once instead of within 5 s.
constexpr const char* migration_39 = R"sql(
CREATE FUNCTION comb_host_moved(community BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  version BIGINT;
BEGIN
  UPDATE communities SET state_version = state_version + 1 WHERE id = community
    RETURNING state_version INTO version;
  IF FOUND THEN
    PERFORM pg_notify('comb_access', community::text || ' ' || version::text);
  END IF;
END $$;

CREATE FUNCTION comb_hosts_touched() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM comb_host_moved(community_id)
    FROM (SELECT community_id FROM old_hosts UNION SELECT community_id FROM new_hosts) AS touched;
  RETURN NULL;
END $$;

CREATE FUNCTION comb_hosts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM comb_host_moved(community_id) FROM (SELECT DISTINCT community_id FROM old_hosts) AS touched;
  RETURN NULL;
END $$;

CREATE TRIGGER community_hosts_deleted AFTER DELETE ON community_hosts REFERENCING OLD TABLE AS old_hosts
  FOR EACH STATEMENT EXECUTE FUNCTION comb_hosts_deleted();
CREATE TRIGGER community_hosts_updated AFTER UPDATE ON community_hosts
  REFERENCING OLD TABLE AS old_hosts NEW TABLE AS new_hosts
  FOR EACH STATEMENT EXECUTE FUNCTION comb_hosts_touched();
)sql";

// An event's tag rows go in one statement, not one per distinct tag: a replaced follow list of
// 5,000 `p` tags ran 5,000 DELETEs, each with an executor start-up of its own (the index probes
// per tag stay). About a fifth less Postgres time per deleted or replaced event, small or large.
constexpr const char* migration_40 = R"sql(
CREATE OR REPLACE FUNCTION comb_event_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  doc TEXT := OLD.raw;
BEGIN
  IF OLD.kind = 13534 THEN
    RETURN NULL; -- a NIP-43 member list: thousands of p tags, stored without tag rows
  END IF;
  IF current_setting('comb.deleting_community', true) = OLD.community_id::text THEN
    RETURN NULL; -- comb_community_deleted deleted the community's tag rows in one range
  END IF;
  IF strpos(doc, '\u0000') > 0 THEN
    doc := regexp_replace(doc, '(?<=(?:^|[^\\])(?:\\\\)*)\\u0000', '\\ufffd', 'g');
  END IF;
  DELETE FROM event_tags tag_row
   USING (SELECT DISTINCT t ->> 0 AS name, t ->> 1 AS value
            FROM json_array_elements(doc::json -> 'tags') AS t
           WHERE json_typeof(t) = 'array' AND length(t ->> 0) = 1 AND t ->> 1 IS NOT NULL) AS tag
   WHERE tag_row.community_id = OLD.community_id AND tag_row.name = tag.name AND tag_row.value = tag.value
     AND tag_row.created_at = OLD.created_at AND tag_row.event_id = OLD.id;
  RETURN NULL;
END $$;
)sql";

// Someone a moderator removed from a room (9001) is not let back in by an invite code they
// still hold; a moderator's add (9000) lifts it, and the room's deletion takes it.
constexpr const char* migration_41 = R"sql(
CREATE TABLE room_removals (
  community_id BIGINT NOT NULL,
  room_id TEXT NOT NULL,
  pubkey BYTEA NOT NULL,
  PRIMARY KEY (community_id, room_id, pubkey),
  FOREIGN KEY (community_id, room_id) REFERENCES rooms (community_id, room_id) ON DELETE CASCADE
);
)sql";

// The deployment's relay key, recorded by the first pod or comb-admin that uses the database
// (storage::check_relay_identity): one row at most.
constexpr const char* migration_42 = R"sql(
CREATE TABLE relay_identity (
  only_row BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
  pubkey BYTEA NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
)sql";

// NIP-22 comments that name their root by address (`A`: an article, a calendar event) borrow the
// rooms of its live version, as those naming it by id (`E`) borrow the root's
// (protocol::root_addresses). Comments stored before with no rooms get the rows they would get
// now: an `A` of an addressable kind, not room state ("3xxxx:<64 hex>:<d>", the d from byte 72).
constexpr const char* migration_43 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT c.community_id, c.event_id, 'room', h.value, c.created_at, c.kind
  FROM event_tags c
  CROSS JOIN LATERAL (SELECT c.value ~ '^3[0-9]{4}:[0-9a-f]{64}:' AS named) f
  CROSS JOIN LATERAL (SELECT CASE WHEN f.named THEN split_part(c.value, ':', 1)::int END AS kind,
                             CASE WHEN f.named THEN decode(substr(c.value, 7, 64), 'hex') END AS pubkey,
                             substr(c.value, 72) AS d) a
  JOIN events v ON v.community_id = c.community_id AND v.pubkey = a.pubkey AND v.kind = a.kind
   AND v.d_tag = a.d
  JOIN event_tags h ON h.community_id = v.community_id AND h.event_id = v.id AND h.name IN ('h', 'room')
 WHERE c.kind = 1111 AND c.name = 'A' AND a.kind NOT BETWEEN 39000 AND 39005
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = c.community_id
                   AND o.event_id = c.event_id AND o.name IN ('h', 'room'));
)sql";

// Newer welshman sends a room join's invite code as `claim` (protocol::parse_room_request):
// such joins stored before, whose code admits whoever reads it, go as those with `code` went
// (migration 31); one whose claims are all empty carried no code and stays. Their tags go by
// trigger.
constexpr const char* migration_44 = R"sql(
DELETE FROM events WHERE kind = 9021 AND raw ~ '\["claim","[^"]';
)sql";

// An invite code an owner or admin chose over NIP-86 (createclaim) is kept sealed with the
// relay key (protocol::seal_claim) as well as hashed, so listclaims can show it to them
// (membership_store::open_claims); minted codes stay hashed only, and a revoked code loses it.
constexpr const char* migration_45 = R"sql(
ALTER TABLE invites ADD COLUMN claim TEXT NULL;
)sql";

// NIP-88 poll votes (1018) borrow the rooms of the poll they name (protocol::borrower_kinds):
// newer Flotilla sends them without an `h`. Votes stored before get the `room` rows they would
// get now, and those rows go with them.
constexpr const char* migration_46 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT r.community_id, r.event_id, 'room', h.value, r.created_at, r.kind
  FROM event_tags r
  JOIN event_tags h ON h.community_id = r.community_id AND h.name IN ('h', 'room')
   AND h.event_id = CASE WHEN r.value ~ '^[0-9a-f]{64}$' THEN decode(r.value, 'hex') END
 WHERE r.kind = 1018 AND r.name = 'e'
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = r.community_id
                   AND o.event_id = r.event_id AND o.name IN ('h', 'room'));

DROP TRIGGER borrowed_rooms_deleted ON events;
CREATE TRIGGER borrowed_rooms_deleted AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.kind IN (5, 7, 1018, 1111, 1984, 9735)
                     OR (OLD.kind BETWEEN 30000 AND 39999 AND OLD.kind NOT BETWEEN 39000 AND 39005))
  EXECUTE FUNCTION comb_borrowed_rooms_deleted();
)sql";

// Pins (39067, newer welshman) name the message they pin by its `e` only: those stored before
// get the rooms of what they pin, as poll votes did (migration 46), also those that kept the
// rooms of a version they replaced. The trigger that deletes borrowed rooms already covers them
// (an addressable kind outside 39000-39005).
constexpr const char* migration_47 = R"sql(
INSERT INTO event_tags (community_id, event_id, name, value, created_at, kind)
SELECT DISTINCT r.community_id, r.event_id, 'room', h.value, r.created_at, r.kind
  FROM event_tags r
  JOIN event_tags h ON h.community_id = r.community_id AND h.name IN ('h', 'room')
   AND h.event_id = CASE WHEN r.value ~ '^[0-9a-f]{64}$' THEN decode(r.value, 'hex') END
 WHERE r.kind = 39067 AND r.name = 'e'
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = r.community_id
                   AND o.event_id = r.event_id AND o.name = 'h')
   AND NOT EXISTS (SELECT 1 FROM event_tags o WHERE o.community_id = r.community_id
                   AND o.event_id = r.event_id AND o.name = 'room' AND o.value = h.value);
)sql";

constexpr migration migrations[] = {
  {22, "events' store time for the gap fill; a community's events skip their tag probes when it"
       " is deleted", migration_22},
  {23, "invites by creator, for the bound on open invites", migration_23},
  {24, "hand edits of access, archive, bans and rooms bump the community's state version",
   migration_24},
  {25, "a TRUNCATE of members, bans or rooms bumps every community's state version", migration_25},
  {26, "comments stored with the rooms of their threads", migration_26},
  {27, "a comment's rooms deleted with it", migration_27},
  {28, "reports borrow the rooms of what they report", migration_28},
  {29, "requests to vanish", migration_29},
  {30, "requests to vanish kept as signed", migration_30},
  {31, "room joins that carried invite codes deleted", migration_31},
  {32, "a room's invite code lives as long as its 9009", migration_32},
  {33, "zap receipts borrow rooms; rooms borrowed from borrowers", migration_33},
  {34, "reactions and deletions borrow rooms", migration_34},
  {35, "edits of addressable events borrow the rooms of what they replace", migration_35},
  {36, "deletions naming other authors' events deleted", migration_36},
  {37, "deletions naming other authors' events by either tag deleted", migration_37},
  {38, "a hand edit of whether members may invite bumps the community's state version", migration_38},
  {39, "a host removed or moved by hand bumps its community's state version", migration_39},
  {40, "an event's tag rows deleted in one statement", migration_40},
  {41, "users removed from a room by a moderator, whom an invite code does not let back in", migration_41},
  {42, "the deployment's relay key", migration_42},
  {43, "comments borrow the rooms of the roots they name by address", migration_43},
  {44, "room joins that carried invite codes as claim deleted", migration_44},
  {45, "invite codes chosen over NIP-86 kept for listclaims", migration_45},
  {46, "poll votes borrow the rooms of their poll", migration_46},
  {47, "pins borrow the rooms of what they pin", migration_47},
};

} // namespace

std::span<const migration> later_migrations() noexcept {
  return migrations;
}

} // namespace comb::storage
