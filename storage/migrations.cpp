// SPDX-License-Identifier: MIT
// Migrations 1 to 21, and the list of all (22 to 47: storage/migrations_later.cpp; 48 on:
// storage/migrations_latest.cpp).
#include "storage/migrations.hpp"

#include <vector>

#include "storage/migration_parts.hpp"

namespace comb::storage {
namespace {

// -- migration 1: communities, events, tags, NIP-09 memory ----------------------
// events -> communities is a real foreign key on purpose: membership writers lock the
// community row FOR NO KEY UPDATE, which does not conflict with the FOR KEY SHARE lock that the
// foreign key check of an event insert takes. (Migration 18 replaces that key by row locks.)
constexpr const char* migration_1 = R"sql(
CREATE TABLE communities (
  id BIGSERIAL PRIMARY KEY,
  host TEXT NOT NULL UNIQUE,
  access TEXT NOT NULL DEFAULT 'open' CHECK (access IN ('open', 'closed')),
  archived_at TIMESTAMPTZ NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  newest_list_at BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE community_hosts (
  host TEXT PRIMARY KEY,
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE
);
CREATE INDEX community_hosts_community ON community_hosts (community_id);

CREATE TABLE events (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  id BYTEA NOT NULL,
  pubkey BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  kind INTEGER NOT NULL,
  d_tag TEXT NULL,
  expires_at BIGINT NULL,
  raw TEXT NOT NULL,
  PRIMARY KEY (community_id, id)
);
CREATE INDEX events_author_kind ON events (community_id, pubkey, kind, created_at DESC);
CREATE INDEX events_kind ON events (community_id, kind, created_at DESC);
CREATE INDEX events_recent ON events (community_id, created_at DESC);
CREATE UNIQUE INDEX events_address ON events (community_id, pubkey, kind, d_tag)
  WHERE d_tag IS NOT NULL;
CREATE INDEX events_expiry ON events (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE event_tags (
  community_id BIGINT NOT NULL,
  event_id BYTEA NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  kind INTEGER NOT NULL,
  FOREIGN KEY (community_id, event_id) REFERENCES events (community_id, id) ON DELETE CASCADE
);
CREATE INDEX event_tags_value ON event_tags (community_id, name, value, created_at DESC);
CREATE INDEX event_tags_event ON event_tags (community_id, event_id);

-- NIP-09: ids an author deleted, so a re-post of them is refused.
CREATE TABLE deleted_events (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  event_id BYTEA NOT NULL,
  pubkey BYTEA NOT NULL,
  PRIMARY KEY (community_id, event_id, pubkey)
);

-- NIP-09: addresses an author deleted, up to the newest deletion's created_at.
CREATE TABLE deleted_addresses (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  pubkey BYTEA NOT NULL,
  kind INTEGER NOT NULL,
  d_tag TEXT NOT NULL,
  deleted_at BIGINT NOT NULL,
  PRIMARY KEY (community_id, pubkey, kind, d_tag)
);
)sql";

// NIP-43 membership: members (list order is `position`), hashed invites, and the allowlist an
// empty community can be backfilled from. One owner per community, enforced by an index.
constexpr const char* migration_2 = R"sql(
ALTER TABLE communities ADD COLUMN members_may_invite BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE members (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  pubkey BYTEA NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  added_by TEXT NULL,
  position BIGSERIAL NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, pubkey)
);
CREATE UNIQUE INDEX members_one_owner ON members (community_id) WHERE role = 'owner';
CREATE INDEX members_order ON members (community_id, position);

CREATE TABLE invites (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL,
  max_uses INTEGER NOT NULL DEFAULT 0 CHECK (max_uses >= 0),
  use_count INTEGER NOT NULL DEFAULT 0 CHECK (use_count >= 0),
  expires_at BIGINT NOT NULL,
  created_by BYTEA NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  revoked BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (community_id, code_hash)
);

CREATE TABLE allowlist (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  pubkey BYTEA NOT NULL,
  added_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, pubkey)
);
)sql";

// A 13534 of a large community is rewritten whole on every membership change (about 750 KB at
// 10,000 members); lz4 compresses it several times faster than the default pglz.
constexpr const char* migration_3 = R"sql(
ALTER TABLE events ALTER COLUMN raw SET COMPRESSION lz4;
)sql";

// Membership requests already processed (28934, 28936, 9030-9032), by event id, with what they
// came to, so a replay to any pod changes nothing and hears the same refusal. A row is needed
// only while its request could pass the time check; `expires_at` says until when, and
// membership writes delete the expired rows.
constexpr const char* migration_4 = R"sql(
CREATE TABLE processed_requests (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  event_id BYTEA NOT NULL,
  expires_at BIGINT NOT NULL,
  outcome TEXT NULL,
  PRIMARY KEY (community_id, event_id)
);
CREATE INDEX processed_requests_expiry ON processed_requests (community_id, expires_at);
)sql";

// Postgres is the membership authority (DESIGN.md "Who enforces it: the database"): every
// change of what access checks read bumps the community's state version (note_access_change,
// with a notification). Member rows changed by anything else (a hand edit, a restore) bump it
// too, so a pod's periodic version check and the writer's remembered members notice them.
constexpr const char* migration_6 = R"sql(
ALTER TABLE communities ADD COLUMN state_version BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION comb_members_touched() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE communities SET state_version = state_version + 1
   WHERE id IN (SELECT DISTINCT community_id FROM touched);
  RETURN NULL;
END $$;

CREATE TRIGGER members_inserted AFTER INSERT ON members REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER members_updated AFTER UPDATE ON members REFERENCING NEW TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
CREATE TRIGGER members_deleted AFTER DELETE ON members REFERENCING OLD TABLE AS touched
  FOR EACH STATEMENT EXECUTE FUNCTION comb_members_touched();
)sql";

// NIP-86 management: a community's NIP-11 name, description and icon; banned pubkeys (refused as
// members and authors) and banned events (deleted, never stored again); and the NIP-98 auth
// events already used, so none is accepted twice by any pod (kept until it could no longer pass
// the time check anyway).
constexpr const char* migration_5 = R"sql(
ALTER TABLE communities ADD COLUMN name TEXT NULL,
  ADD COLUMN description TEXT NULL,
  ADD COLUMN icon TEXT NULL;

CREATE TABLE banned_pubkeys (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  pubkey BYTEA NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  banned_by BYTEA NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, pubkey)
);

CREATE TABLE banned_events (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  event_id BYTEA NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  banned_by BYTEA NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, event_id)
);

CREATE TABLE used_http_auth (
  event_id BYTEA PRIMARY KEY,
  expires_at BIGINT NOT NULL
);
CREATE INDEX used_http_auth_expiry ON used_http_auth (expires_at);
)sql";

// Minted invites (a REQ for 28935 by an owner or admin) are purged once expired; the sweep finds
// them by expiry instead of reading the whole table.
constexpr const char* migration_7 = R"sql(
CREATE INDEX invites_expiry ON invites (expires_at);
)sql";

// NIP-29 rooms inside a community (DESIGN.md "Rooms"): the room and its flags, its members with
// their room roles, its invite codes (hashed, as community invites are). room_clocks keeps each
// room id's newest relay-signed state time after the room is deleted, so a room created again
// never reuses a created_at. Every change goes through note_access_change like membership.
constexpr const char* migration_8 = R"sql(
CREATE TABLE rooms (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  room_id TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  about TEXT NOT NULL DEFAULT '',
  picture TEXT NOT NULL DEFAULT '',
  private BOOLEAN NOT NULL DEFAULT false,
  restricted BOOLEAN NOT NULL DEFAULT false,
  hidden BOOLEAN NOT NULL DEFAULT false,
  closed BOOLEAN NOT NULL DEFAULT false,
  created_by BYTEA NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, room_id)
);

CREATE TABLE room_members (
  community_id BIGINT NOT NULL,
  room_id TEXT NOT NULL,
  pubkey BYTEA NOT NULL,
  roles TEXT[] NOT NULL DEFAULT '{}',
  position BIGSERIAL NOT NULL,
  PRIMARY KEY (community_id, room_id, pubkey),
  FOREIGN KEY (community_id, room_id) REFERENCES rooms (community_id, room_id) ON DELETE CASCADE
);
CREATE INDEX room_members_pubkey ON room_members (community_id, pubkey);

CREATE TABLE room_invites (
  community_id BIGINT NOT NULL,
  room_id TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  created_by BYTEA NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, room_id, code_hash),
  FOREIGN KEY (community_id, room_id) REFERENCES rooms (community_id, room_id) ON DELETE CASCADE
);

CREATE TABLE room_clocks (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  room_id TEXT NOT NULL,
  newest_state_at BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (community_id, room_id)
);
)sql";

// An event's tag rows go with the event, kept by a trigger instead of the foreign key: the key
// checked every inserted tag row against `events` (a per-row lookup and a FOR KEY SHARE lock, the
// largest single cost of storing an event), although tags are only ever written by the
// transaction that inserted their event, right after it. Deleting events (directly, or by the
// cascade from `communities`) still deletes their tags, one index lookup per event as before.
constexpr const char* migration_13 = R"sql(
CREATE FUNCTION comb_event_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM event_tags WHERE community_id = OLD.community_id AND event_id = OLD.id;
  RETURN NULL;
END $$;

CREATE TRIGGER events_deleted_tags AFTER DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION comb_event_deleted();

ALTER TABLE event_tags DROP CONSTRAINT IF EXISTS event_tags_community_id_event_id_fkey;
)sql";

// The events each access change wrote, by (community, version), in the order written
// (note_access_change): pods load them by version, so a change of any size reaches every pod's
// subscribers, and a pod that lost notifications delivers every version after the one it saw.
// Rows older than noted_events_kept are pruned by the community's next change.
constexpr const char* migration_16 = R"sql(
CREATE TABLE noted_events (
  community_id BIGINT NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  position BIGINT NOT NULL,
  event_id BYTEA NOT NULL,
  noted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (community_id, version, position)
);
)sql";

// A history read driven by one tag value (`#e` with one id: the replies to a note) finds each
// row's event_id in the index itself, so on vacuumed pages it never visits the event_tags heap:
// an index-only scan (the heap visit was a buffer per row, and 40 MB of event_tags heap per
// 300,000 tags kept in the buffer cache). event_id is carried, not a key column: as a key it
// would also order ties, but every entry would be unique, and a burst of events sharing a tag
// value and a second (a popular note, comb-bench's ingest) then paid 35 % more in index inserts
// (callgrind) where the old entries were deduplicated. Built before the old index is dropped.
constexpr const char* migration_17 = R"sql(
CREATE INDEX event_tags_value_event ON event_tags (community_id, name, value, created_at DESC) INCLUDE (event_id);
DROP INDEX event_tags_value;
ALTER INDEX event_tags_value_event RENAME TO event_tags_value;
)sql";

// Events keep to existing communities without a foreign key: its check ran one query per
// inserted event (10 % of a writer backend's instructions), where every transaction that inserts
// events already locks its communities' rows once: the writer's batch FOR KEY SHARE (batch_sql's
// snapshot, which fails the events of a community it does not find), membership and room writers
// FOR NO KEY UPDATE, checking the row exists. A DELETE of a community waits for those locks, as
// it waited for the key's, and its trigger then deletes the events (and, through theirs, the
// tags) that ON DELETE CASCADE deleted.
constexpr const char* migration_18 = R"sql(
CREATE FUNCTION comb_community_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events WHERE community_id = OLD.id;
  RETURN NULL;
END $$;

CREATE TRIGGER communities_deleted_events AFTER DELETE ON communities
  FOR EACH ROW EXECUTE FUNCTION comb_community_deleted();

ALTER TABLE events DROP CONSTRAINT IF EXISTS events_community_id_fkey;
)sql";

// A tag row has one index entry, not two: `event_tags_event` (community, event) cost every stored
// tag row a second btree insert at a random place (3 of the 10 index entries of a typical
// event), and it served only lookups that know more than the event. The event's tags are in its
// `raw`, and its row's created_at is a key of event_tags_value, so deleting an event deletes
// each of its tag rows by the full key of event_tags_value (one probe per tag); reads testing a
// tag of a known event probe that index with the event's created_at. Only the room checks (a
// row's `h` or `d` tag, whatever its value: the hidden-room test of every read a reader may not
// see all of) still look tags up by event, in a small partial index of room tags.
// Postgres's JSON functions refuse a string holding an escaped NUL (`\u0000` after an even
// number of backslashes) anywhere in the document; such a value is never indexed
// (is_indexable_tag_value), so the escape becomes U+FFFD first. A member list (13534, up to
// tens of thousands of tags) has no tag rows (membership_steps insert_list): probing each of
// its tags cost 75-160 ms per membership change at 10,000 members. A community's tags go in one
// range before its events.
constexpr const char* migration_21 = R"sql(
CREATE INDEX event_tags_room ON event_tags (community_id, event_id) WHERE name IN ('d', 'h');
DROP INDEX event_tags_event;

CREATE OR REPLACE FUNCTION comb_event_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  doc TEXT := OLD.raw;
  tag RECORD;
BEGIN
  IF OLD.kind = 13534 THEN
    RETURN NULL; -- a NIP-43 member list: thousands of p tags, stored without tag rows
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
  DELETE FROM event_tags WHERE community_id = OLD.id;
  DELETE FROM events WHERE community_id = OLD.id;
  RETURN NULL;
END $$;
)sql";

constexpr migration migrations[] = {
  {1, "communities, events, tags, deletions", migration_1},
  {2, "members, invites, allowlist", migration_2},
  {3, "lz4 for stored events", migration_3},
  {4, "processed membership requests", migration_4},
  {5, "NIP-86: community info, bans, used NIP-98 events", migration_5},
  {6, "community state versions", migration_6},
  {7, "invites by expiry", migration_7},
  {8, "NIP-29 rooms", migration_8},
  {13, "event tags deleted by trigger, not checked by a foreign key", migration_13},
  {16, "events written by access changes, by version", migration_16},
  {17, "tag values indexed with the event id, for index-only reads", migration_17},
  {18, "events kept to existing communities by row locks, not a foreign key", migration_18},
  {21, "one index entry per tag row: tags found by value, room tags by event", migration_21},
};

} // namespace

std::span<const migration> first_migrations() noexcept {
  return migrations;
}

std::span<const migration> all_migrations() noexcept {
  static const std::vector<migration> all = [] {
    std::vector<migration> out(first_migrations().begin(), first_migrations().end());
    out.insert(out.end(), later_migrations().begin(), later_migrations().end());
    out.insert(out.end(), latest_migrations().begin(), latest_migrations().end());
    return out;
  }();
  return all;
}

} // namespace comb::storage
