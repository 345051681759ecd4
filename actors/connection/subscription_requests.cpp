// SPDX-License-Identifier: MIT
// A connection's REQs and CLOSEs: whether a REQ may read (or waits for AUTH, or mints an invite
// first), opening and ending its subscription, and the one CLOSED a refused REQ gets.
#include "actors/connection/subscription_requests.hpp"

#include <algorithm>

#include "actors/clock.hpp"
#include "actors/community/membership_requests.hpp"
#include "actors/connection/waiting_queries.hpp"
#include "protocol/gift_wraps.hpp"
#include "protocol/relay_message.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;

namespace {

/// Drops the REQ of `id` still waiting to start: a closed, refused or replaced subscription's
/// filters are not kept (a client repeating REQ and CLOSE with fresh ids while queries wait
/// would otherwise pile them up behind the first still open).
void forget_waiting(connection_state& st, const std::string& id) {
  erase_if(st.waiting_queries, [&](const auto& waiting) {
    const auto* req = std::get_if<live_request>(&waiting);
    return req && req->subscription_id == id;
  });
  // An invite being minted for it is not sent: the client closed or replaced the subscription
  // it asked on. Its mint still waits on the writer, so it keeps its places until answered
  // (a client alternating REQ and CLOSE would otherwise queue mints without a bound).
  for (auto& [ticket, waiting] : st.awaiting_invite)
    if (waiting.message.subscription_id == id) {
      waiting.abandoned = true;
      waiting.message.filters.clear();
    }
  st.awaiting_auth.forget(id);
}

void end_subscription(connection_self self, const std::string& id) {
  auto& st = self->state;
  if (st.logic->close_subscription(id))
    self->send(st.args.fanout, unsubscribe_atom_v, st.args.owner, st.args.policy.community_id, id);
  end_query(st, id);
}

} // namespace

void close_subscription_of(connection_self self, const std::string& id) {
  forget_waiting(self->state, id);
  end_subscription(self, id);
}

void end_query(connection_state& st, const std::string& id) {
  if (auto it = st.queries_under_way.find(id); it != st.queries_under_way.end()) {
    it->second.ended->store(true, std::memory_order_release);
    st.queries_under_way.erase(it);
  }
}

void end_queries(connection_state& st) {
  for (auto& [id, query] : st.queries_under_way)
    query.ended->store(true, std::memory_order_release);
  st.queries_under_way.clear();
}

void refuse_subscription(connection_self self, const std::string& id, const protocol::rejection& why) {
  if (why.why == protocol::reason::rate_limited)
    bump(self->state.args.metrics->queries_refused);
  // A refused REQ ends the subscription of that id, if one was open: CLOSED means closed.
  close_subscription_of(self, id);
  send_frame(self, protocol::render_closed(id, why.text()));
}

bool asks_for_invite(const protocol::req_message& message) {
  for (const auto& f : message.filters)
    if (f.kinds && std::binary_search(f.kinds->begin(), f.kinds->end(), invite_kind))
      return true;
  return false;
}

namespace {

/// The REQs held waiting for AUTH (but one of `id`, which a REQ of it replaces) or for their
/// invite (each until its mint is answered, even once closed): counted as open.
waiting_requests held_waiting(const connection_state& st, const std::string& id) {
  auto held = st.awaiting_auth.held_apart_from(id);
  held.count += st.awaiting_invite.size();
  for (const auto& [ticket, waiting] : st.awaiting_invite)
    held.cost += cost_of(waiting.message.filters);
  return held;
}

void open_subscription(connection_self self, protocol::req_message& message) {
  auto& st = self->state;
  drop_unindexed_tag_values(message.filters);
  auto generation = st.logic->open_subscription(message.subscription_id, message.filters,
                                                held_waiting(st, message.subscription_id));
  if (!generation) {
    refuse_subscription(self, message.subscription_id, generation.error());
    return;
  }
  // A REQ that replaces one still waiting takes its place, so waiting REQs are never more than
  // the open subscriptions, however often a client repeats an id.
  forget_waiting(st, message.subscription_id);
  // The query of the subscription this REQ replaces, if still read, stops: a client repeating
  // REQ and CLOSE would otherwise keep readers busy for replies nobody takes.
  end_query(st, message.subscription_id);
  auto ended = std::make_shared<std::atomic<bool>>(false);
  st.queries_under_way.emplace(message.subscription_id, connection_state::query_under_way{monotonic_seconds(), ended});
  // What the query hides is decided as it starts (start_waiting_queries), not now.
  st.waiting_queries.emplace_back(
    live_request{self, st.args.owner, st.args.policy.community_id, message.subscription_id,
                 generation.value(), std::move(message.filters), st.history, {}, {}, std::move(ended)});
  if (!st.logic->query_may_start())
    bump(st.args.metrics->queries_waited);
  start_waiting_queries(self);
}

/// Why holding `message` for its invite would take the connection past what it may hold open
/// (subscriptions, filters and their values, the REQs already waiting counted as open);
/// nothing when it fits.
std::optional<protocol::rejection> over_held_bounds(const connection_state& st,
                                                    const protocol::req_message& message) {
  auto waiting = held_waiting(st, message.subscription_id);
  if (auto over = over_subscription_cap(st.logic->subscription_count() + waiting.count, st.args.policy))
    return over;
  filter_holding total = st.logic->held_cost();
  total += waiting.cost;
  total += cost_of(message.filters);
  return over_budget(total, st.args.policy, "open on this connection");
}

/// NIP-43: a REQ for kind 28935 mints an invite for an authenticated member allowed to invite;
/// the invite is sent first, then the REQ proceeds as usual (28935 is never stored).
void request_invite(connection_self self, protocol::req_message& message) {
  auto& st = self->state;
  // The REQ replaces what its id named (NIP-01), whether it is refused or waits for its mint.
  forget_waiting(st, message.subscription_id);
  end_subscription(self, message.subscription_id);
  if (!st.logic->authenticated()) {
    send_frame(self, protocol::render_closed(message.subscription_id,
                                             "auth-required: authenticate to request an invite"));
    return;
  }
  // Who the cache says may not invite is refused here, without a statement on the pod's one
  // membership writer (which checks the stored role of those it lets through).
  if (!st.logic->may_invite(*st.logic->authenticated())) {
    bump(st.args.metrics->queries_refused);
    send_frame(self, protocol::render_closed(message.subscription_id,
                                             "restricted: you may not create invites in this community"));
    return;
  }
  // Each waits on the one membership writer: as many as queries may run, no more.
  if (st.awaiting_invite.size() >= st.args.policy.max_queries_in_flight) {
    bump(st.args.metrics->queries_refused);
    send_frame(self, protocol::render_closed(message.subscription_id,
                                             "rate-limited: too many invite requests awaiting an answer"));
    return;
  }
  // It becomes a subscription once minted; until then it is held as one, within the same bounds.
  drop_unindexed_tag_values(message.filters);
  if (auto over = over_held_bounds(st, message)) {
    bump(st.args.metrics->queries_refused);
    send_frame(self, protocol::render_closed(message.subscription_id, over->text()));
    return;
  }
  // The place goes with the mint, not with the connection: it is the writer's queue it bounds.
  waiting_place_ptr place;
  if (st.args.invites_waiting) {
    place = share_place(st.args.invites_waiting, max_waiting_invites);
    if (!place->taken()) {
      bump(st.args.metrics->queries_refused);
      send_frame(self, protocol::render_closed(message.subscription_id,
                                               "rate-limited: too many invite requests are waiting; retry shortly"));
      return;
    }
  }
  std::uint64_t ticket = st.next_ticket++;
  self->send(st.args.membership_writer, mint_atom_v, ticket, st.args.policy.community_id,
             *st.logic->authenticated(), std::move(place));
  st.awaiting_invite.emplace(ticket, connection_state::awaiting_mint{std::move(message)});
}

/// A REQ refused for want of AUTH, from a connection that has not authenticated, waits for it
/// (reqs_awaiting_auth) unless `may_wait` is false (its wait is over) or a bound is reached:
/// true when it waits. An open subscription of its id ends either way, as the REQ replaces it.
bool wait_for_auth(connection_self self, protocol::req_message& message, const protocol::rejection& why,
                   bool may_wait) {
  auto& st = self->state;
  if (!may_wait || why.why != protocol::reason::auth_required || st.logic->authenticated())
    return false;
  drop_unindexed_tag_values(message.filters);
  // The REQ replaces an open subscription of its id: that one is not counted against it.
  end_subscription(self, message.subscription_id);
  if (!st.awaiting_auth.hold(message, st.args.policy, st.logic->subscription_count(),
                             st.logic->held_cost()))
    return false;
  bump(st.args.metrics->queries_awaited_auth);
  start_auth_wait(self);
  return true;
}

/// A REQ none of whose filters can match anything (welshman 0.11 probes a quiet socket with
/// `{"ids":[]}`) is answered EOSE at once, whoever asks: it needs no reader, no AUTH and no live
/// subscription, and tells nothing. It replaces a subscription of its id as any REQ does.
bool answered_as_empty(connection_self self, const protocol::req_message& message) {
  if (message.filters.empty() || !std::ranges::all_of(message.filters, protocol::matches_nothing))
    return false;
  forget_waiting(self->state, message.subscription_id);
  end_subscription(self, message.subscription_id);
  send_frame(self, protocol::render_eose(message.subscription_id));
  return true;
}

void answer_req(connection_self self, protocol::req_message& message, bool may_wait) {
  auto& st = self->state;
  if (answered_as_empty(self, message))
    return;
  if (auto refused = st.logic->may_read()) {
    if (!wait_for_auth(self, message, *refused, may_wait))
      refuse_subscription(self, message.subscription_id, *refused);
    return;
  }
  auto refused = st.logic->check_room_filters(message.filters);
  if (!refused)
    refused = protocol::guard_gift_wraps(message.filters, st.logic->authenticated());
  if (refused) {
    if (!wait_for_auth(self, message, *refused, may_wait))
      refuse_subscription(self, message.subscription_id, *refused);
    return;
  }
  if (asks_for_invite(message) && st.args.membership_writer) {
    request_invite(self, message);
    return;
  }
  open_subscription(self, message);
}

} // namespace

void on_minted(connection_self self, std::uint64_t ticket, const invite_reply& reply) {
  auto& st = self->state;
  auto it = st.awaiting_invite.find(ticket);
  if (it == st.awaiting_invite.end())
    return;
  auto message = std::move(it->second.message);
  const bool abandoned = it->second.abandoned;
  st.awaiting_invite.erase(it);
  if (abandoned)
    return;
  if (!reply.event_json) {
    send_frame(self, protocol::render_closed(message.subscription_id, reply.refusal));
    return;
  }
  send_frame(self, protocol::render_event_frame(message.subscription_id, *reply.event_json));
  open_subscription(self, message);
}

void on_req(connection_self self, protocol::req_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_req);
  // Sent again after the AUTH's OK: welshman has read it, and dropped the EOSEs before it.
  for (const auto& [id, generation] : st.eoses_before_auth.on_req(message.subscription_id, monotonic_seconds()))
    if (st.logic->is_open(id, generation)) {
      bump(st.args.metrics->eoses_resent_after_auth);
      send_frame(self, protocol::render_eose(id));
    }
  answer_req(self, message, true);
}

/// The REQs that waited for AUTH are answered once their wait is over: the AUTH came and the
/// client's retries had auth_retry_window to take their places, or it did not come (they are
/// then refused as they would have been at once).
void release_awaiting_auth(connection_self self) {
  auto& st = self->state;
  ++st.auth_wait; // a timer still running finds nothing of its own
  for (auto& message : st.awaiting_auth.take())
    answer_req(self, message, false);
}

void start_auth_wait(connection_self self) {
  auto& st = self->state;
  if (st.awaiting_auth.size() + st.joins_awaiting_auth.size() != 1)
    return;
  st.auth_wait_extended = false;
  self->delayed_send(self, auth_grace, auth_wait_atom_v, ++st.auth_wait);
}

/// At auth_grace, the REQs and joins still waiting for AUTH wait on to auth_grace_when_lost where
/// refusing them now would lose them (reqs_awaiting_auth.hpp); true then.
bool wait_longer_for_auth(connection_self self) {
  auto& st = self->state;
  if (st.auth_wait_extended || st.logic->authenticated())
    return false;
  if (st.joins_awaiting_auth.empty() && st.awaiting_auth.size() <= welshman_resent)
    return false;
  st.auth_wait_extended = true;
  self->delayed_send(self, auth_grace_when_lost - auth_grace, auth_wait_atom_v, ++st.auth_wait);
  return true;
}

/// AUTH came: the REQs that waited for it are answered after the retries' window.
void await_retries(connection_self self) {
  auto& st = self->state;
  if (st.awaiting_auth.empty())
    return;
  self->delayed_send(self, auth_retry_window, auth_wait_atom_v, ++st.auth_wait);
}

void on_close(connection_self self, const protocol::close_message& message) {
  auto& st = self->state;
  bump(st.args.metrics->messages_close);
  close_subscription_of(self, message.subscription_id);
}

} // namespace comb::actors
