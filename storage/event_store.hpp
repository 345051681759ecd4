// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/filter.hpp"
#include "protocol/room_rules.hpp"
#include "storage/event_body_cache.hpp"

namespace comb::storage {

class pg_connection;

/// One accepted, verified event to be stored in a community.
struct event_write {
  std::int64_t community_id = 0;
  std::shared_ptr<const protocol::event> ev;
  /// The event rendered once as JSON (protocol::render_event_json); stored as is and served as is.
  std::shared_ptr<const std::string> json;
  /// The rooms (NIP-29 `h` values) the relay admitted the event into: each must still exist when
  /// the event is stored, or it is refused (a room deletion may commit while the event waits for
  /// its batch). Empty for writes that name no room or were not checked against rooms (imports).
  std::vector<std::string> rooms;
  /// Checked again against the database's access when stored, in the batch's transaction: an
  /// archived community stores nothing, a closed one only its members' events. A pod's member
  /// cache follows the database a few milliseconds behind (a removal through another pod or by
  /// hand), and what was stored in that window would be served by every pod for good. Imports,
  /// which restore what a community held, do not ask it.
  bool recheck_access = true;
  /// Whose membership admits the event in a closed community when it is not its author's: a zap
  /// receipt's sender (NIP-57; its author is a Lightning service). Nothing: the author's.
  std::optional<protocol::bytes32> admitted_as = std::nullopt;
  /// A client's request to vanish (NIP-62): carried out too in each other community of the
  /// deployment its `relay` tags name (every one with ALL_RELAYS) before its own; an import
  /// restores one community and carries a request out there only.
  bool vanish_elsewhere = false;
};

/// What storing one event came to. `message` is the full OK text ("" or "<prefix>: ...").
struct store_outcome {
  enum class status {
    stored,     ///< committed; fan it out. OK true.
    duplicate,  ///< already stored, or an older version of a replaceable/addressable event. OK true "duplicate: ...", no fan-out.
    refused,    ///< NIP-09: deleted id or deleted address. OK false "blocked: ...".
    failed,     ///< database trouble; nothing was written. OK false "error: ...".
    applied,    ///< a request carried out and not kept as an event (NIP-62 vanish; a deletion naming events not held here). OK true, no fan-out.
  };
  status result = status::failed;
  std::string message;
  /// stored, and it displaced an older version of its replaceable or addressable key.
  bool replaced = false;
  /// stored, a comment or report of rooms (protocol::room_referents): its referents' rooms, as the batch
  /// read them, stored with it (event_tags rows named `room`) and handed to the fan-out.
  std::optional<std::vector<std::string>> borrowed_rooms = std::nullopt;
  /// applied, an event_write::vanish_elsewhere: the other communities it was carried out in
  /// (those where its author had something to take).
  std::size_t vanished_elsewhere = 0;
  /// stored: its community's state version read in the round trip of the batch's COMMIT, so at
  /// least that of every access change committed before the event (a removal among them). A
  /// pod delivers the event only once it holds that version (committed_event::stored_version);
  /// unknown_state_version when the read failed.
  std::int64_t state_version = 0;
};

/// No version a pod ever holds: an event stored under it is delivered only once a gap fill
/// brings it again from Postgres, with the version read then.
inline constexpr std::int64_t unknown_state_version = std::numeric_limits<std::int64_t>::max();

/// Result of a history query, or one chunk of it: the stored JSON of each matching event, newest
/// first, or a failure.
struct query_result {
  bool ok = false;
  std::vector<std::string> events;
  std::string error; ///< "error: ..." when !ok
  bool last = true;  ///< false for a chunk that more chunks follow
  /// With query_chunks' `share`: the events' JSON in place of `events`, shared with the pod's
  /// body cache (a connection frames it without copying it; the socket writes it from there).
  std::vector<shared_body> shared = {};
  /// The community's state version its rows were read at (the newest of its pages'; 0: no row
  /// was read): a pod holding an older state holds the chunk until it has caught up, as the
  /// rows may show what that state's change hides.
  std::int64_t state_version = 0;
};


/// Bytes of event JSON a result holds.
[[nodiscard]] inline std::size_t bytes_of(const query_result& result) noexcept {
  std::size_t bytes = 0;
  for (const auto& json : result.events)
    bytes += json.size();
  for (const auto& json : result.shared)
    bytes += json->size();
  return bytes;
}

/// Takes one chunk of a streamed history reply (`last` false) and returns whether to go on.
using chunk_handler = std::function<bool(query_result chunk)>;

struct count_result {
  bool ok = false;
  std::uint64_t count = 0;
  std::string error;
  bool approximate = false; ///< more events match than were counted (max_counted_events)
  std::int64_t state_version = 0; ///< the community's, read with the count (as query_result's)
};

/// Events in Postgres, scoped by community. One instance per connection; not thread-safe.
/// No function throws: database failures come back as `failed` outcomes or !ok results, and the
/// connection is re-established on the next call.
class event_store {
public:
  /// With `bodies` (shared by the pod's readers and writers, outliving this), reads ask the
  /// database for the matching ids and row versions only and take each body held there,
  /// fetching the others in one more statement; writes remember what they store.
  explicit event_store(pg_connection& connection, event_body_cache* bodies = nullptr);

  /// Stores a batch in one transaction (group commit) and returns one outcome per write, in order.
  /// Regular events: insert unless present. Replaceable (0, 3, 10000-19999) and addressable
  /// (30000-39999, keyed by d tag): newest created_at wins, same second the lowest id wins; the
  /// loser is `duplicate`. Kind 5 (NIP-09) deletes the author's own events named by `e` tags and
  /// addresses named by `a` tags (versions up to the deletion's created_at), and remembers both so
  /// they are refused later. Ephemeral events must not be passed here.
  [[nodiscard]] std::vector<store_outcome> store_batch(std::span<const event_write> writes);

  /// Events matching any of `filters` in `community_id`, newest first (same second: lowest id
  /// first), each filter limited by its `limit` (absent: `default_limit`), de-duplicated across
  /// filters. Expired (NIP-40, expiration <= now) and deleted events are never returned.
  [[nodiscard]] query_result query(std::int64_t community_id,
                                   const std::vector<protocol::filter>& filters,
                                   std::int64_t now,
                                   std::uint32_t default_limit);

  /// The same events as `query`, read in pages of about `chunk_bytes` (bounded_history_sql, each
  /// page going on after the last row of the one before) and handed to `on_chunk` in order, a
  /// chunk each time the rows read hold `chunk_bytes` or more (at least one event per chunk), so
  /// no more than about one page and one chunk are held here whatever the reply's size. `on_chunk` returns false
  /// to stop reading (the reply is then abandoned). Returns the final part: the events left
  /// (`last` true) or the failure; a failure after some chunks were handed over ends the reply.
  /// With `share` the events come as `shared`: a body the cache holds is handed on as it is,
  /// and one read from the database is held there and handed on, so nobody copies it again.
  /// `hiding`: the reader's, of which the comments and reports are left out (bounded_history_sql).
  [[nodiscard]] query_result query_chunks(std::int64_t community_id,
                                          const std::vector<protocol::filter>& filters,
                                          std::int64_t now,
                                          std::uint32_t default_limit,
                                          std::size_t chunk_bytes,
                                          const chunk_handler& on_chunk,
                                          bool share = false,
                                          const protocol::room_hiding& hiding = {});

  /// NIP-45: how many distinct events match any of `filters` (limits ignored), leaving out
  /// what `hiding` keeps from the reader.
  [[nodiscard]] count_result count(std::int64_t community_id,
                                   const std::vector<protocol::filter>& filters,
                                   std::int64_t now,
                                   const protocol::room_hiding& hiding = {});

  /// Deletes rows whose NIP-40 expiration has passed; returns how many.
  std::uint64_t purge_expired(std::int64_t now);
  /// Rows purge_expired_chunk deletes at most.
  static constexpr std::uint64_t purge_chunk = 5000;
  /// Deletes up to purge_chunk rows whose NIP-40 expiration has passed, in a transaction of
  /// their own; returns how many (purge_chunk: there may be more).
  std::uint64_t purge_expired_chunk(std::int64_t now);

private:
  /// store_batch's transaction for `writes`, replayed when it lost a race or its connection.
  [[nodiscard]] std::vector<store_outcome> store_together(std::span<const event_write> writes);
  /// store_together per community of `writes`, after a lock one of them waits for timed out.
  [[nodiscard]] std::vector<store_outcome> store_per_community(std::span<const event_write> writes);
  /// Carries `request` out in the other communities it reaches (vanish_reach.hpp), a few per
  /// transaction; how many it took something from, or nothing when one could not be done.
  [[nodiscard]] std::optional<std::size_t> vanish_elsewhere(const event_write& request);

  pg_connection& connection_;
  event_body_cache* bodies_ = nullptr;
};

} // namespace comb::storage
