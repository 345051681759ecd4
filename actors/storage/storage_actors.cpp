// SPDX-License-Identifier: MIT
#include "actors/storage/storage_actors.hpp"

#include "actors/clock.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>
#include <utility>

#include "protocol/nip62.hpp"
#include "protocol/relay_message.hpp"
#include "storage/invite_store.hpp"
#include "storage/store_plan.hpp"
#include "storage/nip43_rows.hpp"

namespace comb::actors {
namespace {

bool accepted(const storage::store_outcome& outcome) {
  return outcome.result == storage::store_outcome::status::stored
         || outcome.result == storage::store_outcome::status::duplicate
         || outcome.result == storage::store_outcome::status::applied;
}

} // namespace

void send_oks(const std::vector<pending_write>& batch, const std::vector<storage::store_outcome>& outcomes) {
  struct connection_oks {
    const ok_route* route;
    std::vector<std::string> frames;
  };
  std::vector<connection_oks> by_connection;
  // Keyed by the connection's counter (one per connection), in first-seen order.
  std::unordered_map<const void*, std::size_t> slot_of;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& route = batch[i].route;
    auto [slot, fresh] = slot_of.try_emplace(route.answered.get(), by_connection.size());
    if (fresh)
      by_connection.push_back({&route, {}});
    by_connection[slot->second].frames.push_back(
      protocol::render_ok(route.event_id_hex, accepted(outcomes[i]), outcomes[i].message));
  }
  for (auto& oks : by_connection) {
    std::size_t count = oks.frames.size();
    if (count == 1)
      oks.route->sink->send(std::move(oks.frames.front()));
    else
      oks.route->sink->send_frames(std::move(oks.frames));
    oks.route->answered->fetch_add(count, std::memory_order_release);
  }
}

namespace {

constexpr auto expiry_sweep_interval = std::chrono::seconds(60);
/// Expired invites stay listed (comb-admin invite list) this long before they are purged.
constexpr std::int64_t expired_invites_kept_seconds = 86400;

void count_outcome(relay_metrics& m, const storage::store_outcome& outcome, std::uint32_t kind) {
  using status = storage::store_outcome::status;
  switch (outcome.result) {
    case status::stored: bump(m.events_stored); break;
    case status::duplicate: bump(m.events_duplicate); break;
    case status::applied:
      if (outcome.message == storage::msg_deletion_not_kept) {
        bump(m.deletions_not_kept);
        break;
      }
      if (kind != protocol::vanish_kind) { // deleted or replaced later in its own batch
        bump(m.events_stored);
        break;
      }
      bump(m.vanish_requests);
      bump(m.vanish_other_communities, static_cast<std::uint64_t>(outcome.vanished_elsewhere));
      break;
    case status::refused: bump(m.events_rejected); break;
    case status::failed: bump(m.events_failed); break;
  }
}

/// The event committed under a state version of its community this pod does not hold yet: a
/// change another pod or comb-admin made (a removal) has not reached this pod's cache, whose
/// checks would still let its readers in.
bool must_await(const writer_args& args, const committed_event& committed) {
  return args.hold && args.registry
         && committed.stored_version > args.registry->held_version(committed.community_id);
}

void flush(caf::stateful_actor<writer_state>* self) {
  auto& st = self->state;
  st.flush_queued = false;
  if (st.pending.empty())
    return;
  std::size_t take = std::min(st.pending.size(), st.args.batch_max);
  std::vector<pending_write> batch(std::make_move_iterator(st.pending.begin()),
                                   std::make_move_iterator(st.pending.begin() + static_cast<std::ptrdiff_t>(take)));
  st.pending.erase(st.pending.begin(), st.pending.begin() + static_cast<std::ptrdiff_t>(take));
  std::vector<storage::event_write> writes;
  writes.reserve(batch.size());
  for (const auto& p : batch)
    writes.push_back(p.write);
  auto started = std::chrono::steady_clock::now();
  auto outcomes = st.store->store_batch(writes);
  st.args.metrics->commit_latency.observe(
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  bump(st.args.metrics->write_batches);
  // The fan-out gets the batch's events in one message (before the OKs, as it got each event
  // before): it delivers them to each connection together, so they leave in few socket writes.
  committed_events committed_batch;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    count_outcome(*st.args.metrics, outcomes[i], batch[i].write.ev->kind);
    if (outcomes[i].result != storage::store_outcome::status::stored)
      continue;
    committed_event committed{batch[i].write.community_id, {batch[i].write.ev, batch[i].write.json},
                              outcomes[i].state_version};
    if (auto& rooms = outcomes[i].borrowed_rooms)
      committed.event.borrowed_rooms = std::make_shared<const std::vector<std::string>>(std::move(*rooms));
    if (st.args.bridge)
      self->send(st.args.bridge, publish_atom_v, committed);
    if (must_await(st.args, committed)) {
      bump(st.args.metrics->events_awaited);
      self->send(st.args.hold, await_atom_v, std::move(committed));
    } else {
      committed_batch.push_back(std::move(committed));
    }
  }
  if (!committed_batch.empty())
    self->send(st.args.fanout, publish_atom_v, std::move(committed_batch));
  send_oks(batch, outcomes);
  std::int64_t answered_weight = 0;
  for (const auto& p : batch)
    answered_weight += p.route.weight;
  st.args.metrics->storage_waiting_bytes.fetch_sub(answered_weight, std::memory_order_relaxed);
  if (!st.pending.empty()) {
    st.flush_queued = true;
    self->send(self, flush_atom_v);
  }
}

} // namespace

caf::behavior storage_writer(caf::stateful_actor<writer_state>* self, writer_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.connection = std::make_unique<storage::pg_connection>(st.args.database_url);
  st.store = std::make_unique<storage::event_store>(*st.connection, st.args.bodies.get());
  if (st.args.sweeps_expired)
    self->delayed_send(self, expiry_sweep_interval, tick_atom_v);
  return {
    [=](store_atom, ok_route& route, storage::event_write& write) {
      auto& s = self->state;
      s.pending.push_back({std::move(route), std::move(write)});
      // The flush message queues behind every request already in the mailbox, so one
      // transaction takes all of them.
      if (!s.flush_queued) {
        s.flush_queued = true;
        self->send(self, flush_atom_v);
      }
    },
    [=](flush_atom) { flush(self); },
    [=](shutdown_atom) {
      // Everything queued before the shutdown is committed and answered first.
      while (!self->state.pending.empty())
        flush(self);
      self->quit();
    },
    [=](purge_atom) {
      // One chunk a message: the batches queued meanwhile are stored and answered between two,
      // however large the backlog (an import, a long downtime, many short-lived events).
      auto& writer = self->state;
      writer.purging = writer.store->purge_expired_chunk(unix_now()) == storage::event_store::purge_chunk;
      if (writer.purging)
        self->send(self, purge_atom_v);
    },
    [=](tick_atom) {
      // One purge at a time: a backlog longer than a minute is not purged twice over.
      if (!std::exchange(self->state.purging, true))
        self->send(self, purge_atom_v);
      // Membership writes forget their community's old request ids; this catches communities
      // that have had no request since.
      (void)storage::forget_processed_requests(*self->state.connection, unix_now());
      storage::invite_store invites(*self->state.connection);
      bump(self->state.args.metrics->invites_purged,
           invites.purge_expired(unix_now() - expired_invites_kept_seconds));
      self->delayed_send(self, expiry_sweep_interval, tick_atom_v);
    },
  };
}

namespace {

/// A reply waits for its client at most this many times `patience` in all, however the client
/// paces its reading: one that reads a little now and then must not hold a reader for hours.
constexpr int max_wait_patiences = 3;

/// Waits until `flow` has room for `bytes` more within `budget` (or holds nothing); false when
/// the client's connection is ending, nothing it holds was written for `patience`, or the reply
/// has waited max_wait_patiences times `patience` (`waited` sums its waits).
bool wait_for_room(const history_flow& flow, std::size_t bytes, std::size_t budget,
                   std::chrono::milliseconds patience, std::chrono::steady_clock::duration& waited) {
  auto pause = std::chrono::milliseconds(1);
  auto last_look = std::chrono::steady_clock::now();
  auto last_progress = last_look;
  std::size_t held = flow.held();
  while (held > 0 && held + bytes > budget) {
    if (flow.sink && flow.sink->ending())
      return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(16));
    std::size_t now_held = flow.held();
    auto now = std::chrono::steady_clock::now();
    waited += now - last_look;
    last_look = now;
    if (now_held < held)
      last_progress = now;
    if (now - last_progress > patience || waited > patience * max_wait_patiences)
      return false;
    held = now_held;
  }
  return true;
}

/// Waits for room as wait_for_room does (counted as a wait), but only while the reply holds one
/// of the pod's wait slots: with none free the reply is refused at once rather than holding
/// another reader.
enum class room { made, client_too_slow, client_behind, readers_busy, took_too_long };

/// One reply's pacing: its wait slot, whether it has sent anything yet, how long it has waited.
struct reply_pacing {
  reply_wait_slot slot;
  bool sent_any = false;
  std::chrono::steady_clock::duration waited{};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  /// Time spent reading, not waiting for the client, past `limit`.
  [[nodiscard]] bool read_past(std::chrono::milliseconds limit) const {
    return std::chrono::steady_clock::now() - started - waited > limit;
  }
};

std::chrono::milliseconds reading_limit(const reader_args& args) {
  return std::chrono::milliseconds(args.max_reply_reading_ms > 0 ? args.max_reply_reading_ms
                                                                 : 3 * std::uint64_t{args.statement_timeout_ms});
}

room make_room(const history_flow& flow, std::size_t bytes, std::size_t budget,
               std::chrono::milliseconds patience, reply_pacing& pacing, relay_metrics* metrics) {
  std::size_t held = flow.held();
  if (held == 0 || held + bytes <= budget)
    return room::made;
  // The client has not read what earlier replies hold, nearly a whole budget of it (the reader
  // stops short of the budget, so that is as far as it gets): a reply that cannot send even its
  // first chunk would only hold a reader waiting behind them.
  if (!pacing.sent_any)
    return room::client_behind;
  if (metrics)
    bump(metrics->history_waits);
  if (!pacing.slot.hold())
    return room::readers_busy;
  return wait_for_room(flow, bytes, budget, patience, pacing.waited) ? room::made : room::client_too_slow;
}

std::string_view abandoned_because(room why) {
  switch (why) {
    case room::readers_busy:
      return "error: history reply abandoned: too many clients are reading slowly; try again later";
    case room::client_behind:
      return "error: history reply refused: earlier replies are still unread";
    case room::took_too_long:
      return "error: history reply abandoned: it took too long to read; ask for less";
    default: return "error: history reply abandoned: the client did not read it in time";
  }
}

bool subscription_ended(const history_request& request) {
  return request.ended && request.ended->load(std::memory_order_acquire);
}

/// Its subscription ended, or its connection is closing (hung up, cut as a slow reader, its
/// community archived): nobody takes what is read for it.
bool nobody_reads(const history_request& request) {
  return subscription_ended(request) || (request.flow && request.flow->sink && request.flow->sink->ending());
}

/// Charges the query's client address for `spent` of a reader's time (history_flow::address).
void charge_database_time(const reader_args& args, const history_request& request,
                          std::chrono::steady_clock::duration spent) {
  if (!request.flow || !request.flow->address)
    return;
  // In fractions: most queries take less than a millisecond, and rounded down they cost nothing.
  const double ms = std::chrono::duration<double, std::milli>(spent).count();
  if (ms <= 0)
    return;
  request.flow->address->charge_database(monotonic_seconds(), ms);
  if (args.metrics)
    args.metrics->database_ms_charged.fetch_add(static_cast<std::uint64_t>(ms), std::memory_order_relaxed);
}

/// Its client address owes the readers for earlier queries (charge_database_time): the queries
/// it queued before its first came back are not run either, or an address that queued a
/// thousand slow ones at once would hold the readers for all of them.
bool address_in_debt(const reader_args& args, const history_request& request) {
  if (!request.flow || !request.flow->address || !request.flow->address->database_in_debt(monotonic_seconds()))
    return false;
  if (args.metrics)
    bump(args.metrics->queries_refused_address_debt);
  return true;
}

constexpr const char* address_debt_refusal =
  "rate-limited: the queries from your address have kept the database busy; try again shortly";

/// Streams one REQ's history to its connection in chunks of a sixteenth of the budget, each
/// sent only when what the connection still holds of its history leaves room for it. Returns
/// the time it waited for the client (not the database's).
std::chrono::steady_clock::duration answer_history(caf::stateful_actor<reader_state>* self,
                                                   const history_request& request) {
  auto& s = self->state;
  const std::size_t budget = s.args.max_history_bytes;
  const std::size_t chunk_bytes = std::max<std::size_t>(budget / 16, 4096);
  const std::chrono::milliseconds patience(std::max<std::uint32_t>(s.args.statement_timeout_ms, 1000));
  relay_metrics* metrics = s.args.metrics.get();
  const auto limit = reading_limit(s.args);
  room outcome = room::made;
  reply_pacing pacing{reply_wait_slot(s.args.waits.get(), s.args.index)};
  auto deliver = [&](storage::query_result chunk) {
    if (nobody_reads(request))
      return false; // the rest is not read
    if (!chunk.last && pacing.read_past(limit)) {
      outcome = room::took_too_long;
      return false;
    }
    std::size_t bytes = storage::bytes_of(chunk);
    if (request.flow) {
      outcome = make_room(*request.flow, bytes, budget, patience, pacing, metrics);
      if (outcome != room::made)
        return false;
      request.flow->in_mailbox.fetch_add(bytes, std::memory_order_acq_rel);
    }
    pacing.sent_any = true;
    if (!chunk.last && metrics)
      bump(metrics->history_chunks);
    self->send(request.reply_to, history_atom_v, request.subscription_id, request.generation,
               std::move(chunk));
    return true;
  };
  auto rest = s.store->query_chunks(request.community_id, request.filters, unix_now(),
                                    s.args.default_limit, chunk_bytes, deliver, true,
                                    request.hidden);
  if (rest.ok && deliver(std::move(rest)))
    return pacing.waited;
  if (outcome != room::made) {
    if (metrics)
      bump(outcome == room::readers_busy    ? metrics->history_refused_busy
           : outcome == room::took_too_long ? metrics->history_too_long
                                            : metrics->history_abandoned);
    rest = storage::query_result{false, {}, std::string(abandoned_because(outcome))};
  }
  self->send(request.reply_to, history_atom_v, request.subscription_id, request.generation,
             std::move(rest));
  return pacing.waited;
}

/// The query's connection has closed, or its subscription ended: reading for it would only cost
/// Postgres (a client may open queries and leave, or close them, again and again).
bool client_gone(const reader_args& args, const history_request& request) {
  if (!nobody_reads(request))
    return false;
  if (args.metrics)
    bump(args.metrics->queries_skipped);
  return true;
}

void note_answered(const reader_args& args) {
  if (args.waits)
    args.waits->answered(args.index);
}

} // namespace

caf::behavior storage_reader(caf::stateful_actor<reader_state>* self, reader_args args) {
  auto& st = self->state;
  st.args = std::move(args);
  storage::pg_reconnect_policy policy;
  policy.statement_timeout_ms = st.args.statement_timeout_ms;
  // Reads go on from a primary turned read-only (a full disk), but from a standby (which lags:
  // a ban or deletion shows late) only while no server takes writes.
  policy.servers = storage::server_choice::writable_else_any;
  st.connection = std::make_unique<storage::pg_connection>(st.args.database_url, policy);
  st.store = std::make_unique<storage::event_store>(*st.connection, st.args.bodies.get());
  return {
    [=](query_atom, const history_request& request) {
      if (client_gone(self->state.args, request)) {
        if (subscription_ended(request)) // its connection frees the query's place on a reply
          self->send(request.reply_to, history_atom_v, request.subscription_id, request.generation,
                     storage::query_result{false, {}, "error: the subscription ended before its query started"});
      } else if (address_in_debt(self->state.args, request)) {
        self->send(request.reply_to, history_atom_v, request.subscription_id, request.generation,
                   storage::query_result{false, {}, address_debt_refusal});
      } else {
        const auto started = std::chrono::steady_clock::now();
        const auto waited = answer_history(self, request);
        charge_database_time(self->state.args, request, std::chrono::steady_clock::now() - started - waited);
      }
      note_answered(self->state.args);
    },
    [=](count_atom, const history_request& request) {
      if (client_gone(self->state.args, request)) {
        note_answered(self->state.args);
        return;
      }
      if (address_in_debt(self->state.args, request)) {
        self->send(request.reply_to, counted_atom_v, request.subscription_id, request.generation,
                   storage::count_result{false, 0, address_debt_refusal});
      } else {
        const auto started = std::chrono::steady_clock::now();
        auto result = self->state.store->count(request.community_id, request.filters, unix_now(),
                                                request.hidden);
        charge_database_time(self->state.args, request, std::chrono::steady_clock::now() - started);
        self->send(request.reply_to, counted_atom_v, request.subscription_id, request.generation,
                   std::move(result));
      }
      note_answered(self->state.args);
    },
  };
}

} // namespace comb::actors
