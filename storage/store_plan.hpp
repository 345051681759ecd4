// SPDX-License-Identifier: MIT
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "storage/event_rows.hpp"
#include "storage/event_store.hpp"

namespace comb::storage {

// The pure core of store_batch: given a batch and what the database holds for its keys (read
// under the batch's locks), decide every outcome and the rows to write. No I/O.

struct event_key {
  std::int64_t community_id = 0;
  protocol::bytes32 id{};

  friend auto operator<=>(const event_key&, const event_key&) = default;
};

/// NIP-09 memory of one deleted id: only its author's deletion counts.
struct tombstone {
  event_key key;
  protocol::bytes32 pubkey{};

  friend auto operator<=>(const tombstone&, const tombstone&) = default;
};

/// A stored event as the plan needs it.
struct stored_event {
  protocol::bytes32 pubkey{};
  std::uint32_t kind = 0;
  std::int64_t created_at = 0;
  std::optional<address> addr;
};

/// Someone posting in a room: a comment's author in a room of its thread.
struct room_poster {
  std::int64_t community_id = 0;
  std::string room;
  protocol::bytes32 pubkey{};

  friend auto operator<=>(const room_poster&, const room_poster&) = default;
};

/// What a batch's keys look like in the database.
struct batch_snapshot {
  std::map<event_key, stored_event> events;     ///< by id: the batch's ids and `e` targets
  std::set<tombstone> tombstones;               ///< for the batch's ids
  std::map<address, event_key> current;         ///< live version of each address of the batch
  std::map<address, std::int64_t> deleted_until; ///< NIP-09 address deletions
  std::set<event_key> banned_ids;               ///< NIP-86 banevent, for the batch's ids
  std::set<std::pair<std::int64_t, protocol::bytes32>> banned_authors; ///< NIP-86 banpubkey
  /// The batch's communities that no longer exist (deleted before the batch locked them).
  std::set<std::int64_t> missing_communities;
  /// Of the batch's communities, the closed and the archived ones.
  std::set<std::int64_t> closed_communities;
  std::set<std::int64_t> archived_communities;
  /// Of the batch's (community, author) pairs, those where the author is a member.
  std::set<std::pair<std::int64_t, protocol::bytes32>> member_authors;
  /// Of the batch's (community, author) pairs, those who asked to vanish (NIP-62): up to when.
  std::map<std::pair<std::int64_t, protocol::bytes32>, std::int64_t> vanished_until;
  /// Of the rooms the batch's writes were admitted into and its comment roots' rooms, those that exist.
  std::set<std::pair<std::int64_t, std::string>> rooms;
  /// The rooms (`h`) of each stored referent of the batch (batch_keys::room_referents).
  std::map<event_key, std::vector<std::string>> referent_rooms;
  /// The rooms (`h`, or borrowed) of the live version of each of batch_keys::borrowing_addresses.
  std::map<event_key, std::vector<std::string>> version_rooms;
  /// Of the rooms read (the writes' and the comment roots'), those only members may post in.
  std::set<std::pair<std::int64_t, std::string>> restricted_rooms;
  /// Of the restricted rooms the writes name, those whose messages only members read (private
  /// or hidden): only members react there (protocol::room_write_allowed).
  std::set<std::pair<std::int64_t, std::string>> unread_by_outsiders;
  /// Of the room_posters_to_read, those who may post in the room: its members, the community's
  /// owner and admins (protocol::room_write_allowed). Read after the rest, and only for them.
  std::set<room_poster> room_posters;
  /// The batch transaction's id modulo 2^32, the `xmin` of the rows it inserts; 0 when not read.
  std::uint32_t transaction = 0;
};

/// The keys a batch touches: what to lock and what to read.
struct batch_keys {
  std::vector<event_key> ids;          ///< the writes' ids and the ids their `e` tags delete
  /// The writes' addresses, those their `a` tags delete, those they borrow rooms from.
  std::vector<address> addresses;
  /// Of `addresses`, those the batch only reads (referent_addresses_read) and
  /// neither writes nor deletes: locked shared, so comments on one root do not queue.
  std::vector<address> read_addresses;
  std::map<std::int64_t, bool> communities; ///< community -> deletes by id or author (exclusive lock)
  std::vector<std::pair<std::int64_t, protocol::bytes32>> authors; ///< (community, pubkey)
  /// (community, room) of event_write::rooms, and the `h` of the comment roots written in the batch
  std::vector<std::pair<std::int64_t, std::string>> rooms;
  std::vector<event_key> room_referents; ///< protocol::room_referents of the writes
  /// Addresses of the writes that keep the rooms of the version they replace
  /// (protocol::keeps_rooms_of_replaced, no `h` of their own).
  std::vector<address> borrowing_addresses;
};

/// One advisory lock to take: sorted by key, every transaction takes them in the same order.
struct lock_request {
  std::int64_t key = 0;
  bool exclusive = true;

  friend auto operator<=>(const lock_request&, const lock_request&) = default;
};

/// A request to vanish carried out (NIP-62): the author's events up to `until` are deleted, with
/// the gift wraps (1059) addressed to them, and the author's older events refused from then on.
struct vanish_request {
  std::int64_t community_id = 0;
  protocol::bytes32 pubkey{};
  std::int64_t until = 0;
  protocol::bytes32 request_id{};
  std::shared_ptr<const std::string> request_json = nullptr; ///< the request as signed (event_write::json)
  /// The line is kept even if the request deletes nothing stored: it removed events this batch
  /// read or wrote, or it is an import's (restoring the line its source kept).
  bool keeps_line = false;
};

/// Rows to write, in this order: delete, carry out requests to vanish, insert events (and their
/// tags), remember deletions.
struct store_plan {
  std::vector<store_outcome> outcomes; ///< one per write
  std::vector<event_key> deletes;
  std::vector<vanish_request> vanishes;
  std::vector<std::size_t> inserts; ///< indexes into the batch
  std::vector<tombstone> tombstones;
  std::map<address, std::int64_t> address_deletions;
};

[[nodiscard]] batch_keys keys_of(std::span<const event_write> writes);

[[nodiscard]] std::vector<lock_request> locks_for(const batch_keys& keys);

/// The authors whose right to post in a restricted room the batch reads before it plans: of
/// each write, in the rooms it names (the connection checked them against its pod's cache,
/// which may lag a removal made elsewhere) and, of a comment, in the rooms of its thread (no
/// `h` for the connection to check: known only here). Empty when no such room is written to.
[[nodiscard]] std::vector<room_poster> room_posters_to_read(std::span<const event_write> writes,
                                                            const batch_snapshot& snapshot);

[[nodiscard]] store_plan plan_batch(std::span<const event_write> writes,
                                    const batch_snapshot& snapshot);

// The OK messages store_batch produces (NIP-01 prefixes).
inline constexpr const char* msg_already_have = "duplicate: already have this event";
inline constexpr const char* msg_have_newer = "duplicate: have a newer version";
inline constexpr const char* msg_deleted_id = "blocked: this event was deleted by its author";
inline constexpr const char* msg_deleted_address = "blocked: this address was deleted";
inline constexpr const char* msg_banned_event = "blocked: this event is banned from this community";
inline constexpr const char* msg_banned_author = "blocked: you are banned from this community";
inline constexpr const char* msg_archived = "restricted: this community is archived";
inline constexpr const char* msg_not_member =
  "restricted: the author of this event is not a member of this community";
inline constexpr const char* msg_room_deleted = "invalid: the room this event was posted to was deleted";
inline constexpr const char* msg_vanished = "blocked: the author of this event asked this relay to delete their events";
inline constexpr const char* msg_room_restricted = "restricted: only members of this room may post in it";
/// An event without rooms of its own borrows its thread's; every delivery checks each of them
/// for each subscription, so they are bounded as `h` tags are (protocol::max_rooms_per_event).
inline constexpr const char* msg_borrows_too_many_rooms =
  "invalid: the events this one names are in more than 16 rooms; name fewer";
inline constexpr const char* msg_deletes_others = "invalid: a deletion may name only its author's events";
inline constexpr const char* msg_deletion_in_too_many_rooms =
  "info: deleted your events it names here; not kept, as they are in more than 16 rooms";
inline constexpr const char* msg_deletion_not_kept =
  "info: deleted your events it names here; not kept, as it names events that are not yours here";
inline constexpr const char* msg_failed = "error: could not store the event, please retry";

} // namespace comb::storage
