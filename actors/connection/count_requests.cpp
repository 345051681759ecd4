// SPDX-License-Identifier: MIT
#include "actors/connection/count_requests.hpp"
#include "actors/connection/subscription_requests.hpp"

#include "protocol/gift_wraps.hpp"
#include "protocol/relay_message.hpp"
#include "storage/event_rows.hpp"

namespace comb::actors {
namespace {

void refuse(connection_self self, const std::string& sub, const std::string& why) {
  // CLOSED means closed: a REQ of the same id open on this connection ends with it, as it does
  // when a COUNT of its id is refused by the rate limits (refuse_subscription), so the client
  // is never sent events on an id it was told is closed.
  close_subscription_of(self, sub);
  send_frame(self, protocol::render_closed(sub, why));
}

/// The count's place is free again: the next waiting query may start.
void finish(connection_self self) {
  self->state.logic->query_finished();
  start_waiting_queries(self);
}

} // namespace

void on_count(connection_self self, protocol::count_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_count);
  const auto& sub = message.subscription_id;
  if (auto refused = st.logic->may_read())
    return refuse(self, sub, refused->text());
  if (auto refused = st.logic->check_room_filters(message.filters))
    return refuse(self, sub, refused->text());
  if (auto refused = protocol::guard_gift_wraps(message.filters, st.logic->authenticated()))
    return refuse(self, sub, refused->text());
  if (auto refused = st.logic->check_count(message.filters)) {
    bump(st.args.metrics->queries_refused);
    return refuse(self, sub, refused->text());
  }
  if (st.waiting_counts >= max_waiting_counts) {
    bump(st.args.metrics->queries_refused);
    return refuse(self, sub, "rate-limited: too many queries at once, wait for answers");
  }
  drop_unindexed_tag_values(message.filters);
  st.logic->count_taken(cost_of(message.filters)); // given back in on_counted, on the same filters
  ++st.waiting_counts;
  st.waiting_queries.emplace_back(history_request{self, st.args.policy.community_id, sub, 0,
                                                  std::move(message.filters), st.history, {}});
  if (!st.logic->query_may_start())
    bump(st.args.metrics->queries_waited);
  start_waiting_queries(self);
}

void start_count(connection_self self, history_request request) {
  auto& st = self->state;
  request.generation = st.next_count++;
  request.hidden = st.logic->hidden_rooms();
  auto& kept = st.counts_in_flight[request.generation];
  kept.request = request;
  self->send(reader_for(self), count_atom_v, std::move(request));
}

void on_counted(connection_self self, std::uint64_t ticket, const storage::count_result& result) {
  auto& st = self->state;
  auto it = st.counts_in_flight.find(ticket);
  if (it == st.counts_in_flight.end())
    return;
  auto& counting = it->second;
  auto sub = counting.request.subscription_id;
  if (auto refused = st.logic->may_read()) {
    // Counted before a revocation the connection has heard of since: not answered then.
    refuse(self, sub, refused->text());
  } else if (!result.ok) {
    refuse(self, sub, result.error);
  } else if (auto now = st.logic->hidden_rooms(); now != counting.request.hidden) {
    if (counting.recounts < max_recounts) {
      ++counting.recounts;
      counting.request.hidden = std::move(now);
      self->send(reader_for(self), count_atom_v, counting.request); // keeps its place
      return;
    }
    refuse(self, sub, "error: the rooms changed while counting; ask again");
  } else {
    send_frame(self, protocol::render_count(sub, result.count, result.approximate));
  }
  st.logic->count_answered(cost_of(counting.request.filters));
  st.counts_in_flight.erase(it);
  finish(self);
}

} // namespace comb::actors
