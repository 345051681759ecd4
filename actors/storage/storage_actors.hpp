// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/community/community_registry.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "actors/storage/reader_waits.hpp"
#include "storage/event_body_cache.hpp"
#include "storage/event_store.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

/// A pending write: where its OK goes, and the event.
struct pending_write {
  ok_route route;
  storage::event_write write;
};

/// Queues each OK of a committed batch (`outcomes[i]` for `batch[i]`) on its connection's
/// socket, a connection's OKs in one push (one lock, at most one wake-up of its socket writer)
/// in the order of its events, then counts them answered so the connection may send more.
void send_oks(const std::vector<pending_write>& batch, const std::vector<storage::store_outcome>& outcomes);

struct writer_args {
  std::string database_url;
  std::size_t batch_max = 256;
  caf::actor fanout;
  /// Also told about every committed event (cross-pod delivery); may be unset.
  caf::actor bridge;
  /// What state version of each community this pod holds: a stored event whose commit read a
  /// newer one goes to `hold` (the bridge actor, whatever transports the pod has) and waits
  /// there instead of reaching the fan-out at once. Either may be unset (tests): then every
  /// event goes straight to the fan-out.
  std::shared_ptr<const community_registry> registry;
  caf::actor hold;
  std::shared_ptr<relay_metrics> metrics;
  /// One writer of the pod deletes expired events (NIP-40) every minute.
  bool sweeps_expired = true;
  /// The pod's event body cache (shared with its readers), given what each batch stores; may be null.
  std::shared_ptr<storage::event_body_cache> bodies;
};

struct writer_state {
  writer_args args;
  std::unique_ptr<storage::pg_connection> connection;
  std::unique_ptr<storage::event_store> store;
  std::vector<pending_write> pending;
  bool flush_queued = false;
  bool purging = false; ///< a purge_atom is on its way: expired events are being deleted
  static inline const char* name = "storage-writer";
};

/// A writer of events (run detached: libpq blocks); a pod runs several, and each connection
/// sends all of its events to one of them, so a client's events are stored in the order sent.
/// Every store request that is queued when a flush runs goes into one transaction (group
/// commit); after commit each stored event is published to fan-out and bridge (one stored
/// under a state version of its community this pod does not hold yet waits in the bridge's hold
/// instead of going to the fan-out: writer_args::registry), then each
/// requester's socket gets its OKs (`ok_route`), a connection's OKs of one batch in one push.
/// While one writer waits for its commit, the others build and send theirs: concurrent writers
/// are safe as pods are (address locks, ON CONFLICT).
caf::behavior storage_writer(caf::stateful_actor<writer_state>* self, writer_args args);

struct reader_args {
  std::string database_url;
  std::uint32_t default_limit = 500;
  /// A REQ or COUNT query running longer is cancelled by Postgres (its client gets CLOSED).
  std::uint32_t statement_timeout_ms = 10000;
  /// Bytes of history one connection's replies hold on their way out; replies stream in chunks.
  std::size_t max_history_bytes = 16 * 1024 * 1024;
  std::shared_ptr<relay_metrics> metrics; ///< may be null
  /// Shared by the pod's readers (may be null: waits unbounded, for tests of one reader).
  std::shared_ptr<reader_waits> waits;
  std::size_t index = 0; ///< this reader's place among the pod's readers
  /// The pod's event body cache (shared with the other readers and the writers); may be null.
  std::shared_ptr<storage::event_body_cache> bodies;
  /// How long one reply may spend reading, its waits for the client aside (each page is one
  /// statement, bounded by the statement timeout, but a reply may take many pages); 0: three
  /// statement timeouts.
  std::uint32_t max_reply_reading_ms = 0;
};

struct reader_state {
  reader_args args;
  std::unique_ptr<storage::pg_connection> connection;
  std::unique_ptr<storage::event_store> store;
  static inline const char* name = "storage-reader";
};

/// Answers REQ history and COUNT queries (run detached, several per pod).
caf::behavior storage_reader(caf::stateful_actor<reader_state>* self, reader_args args);

} // namespace comb::actors
