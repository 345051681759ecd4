// SPDX-License-Identifier: MIT
#include "actors/connection/connection.hpp"

#include "actors/clock.hpp"
#include "actors/community/membership_requests.hpp"
#include <algorithm>
#include <iterator>
#include <unordered_map>

#include "protocol/gift_wraps.hpp"
#include "protocol/hex.hpp"
#include "protocol/kind_rules.hpp"
#include "protocol/nip42.hpp"
#include "protocol/nip62.hpp"
#include "protocol/relay_message.hpp"
#include "protocol/room.hpp"
#include "protocol/zap.hpp"
#include "storage/event_rows.hpp"

namespace comb::actors {
namespace protocol = comb::protocol;
using protocol::reason;
using protocol::rejection;

namespace {

rejection not_a_member() {
  return {reason::restricted, "you are not a member of this community"};
}

/// Membership requests (28934, 28936, 9030-9032) and room requests (9000-9022) act for their
/// author, so only a connection authenticated as the author may send one, `-` tag or not (the
/// apps send joins and leaves without it). A refused request is not stored, so without this
/// anyone could send it again later, when it would succeed (an admin's removal of someone who
/// joined since), or bring one signed for a room of the same id elsewhere.
std::optional<rejection> check_request_author(const protocol::event& ev,
                                              const std::optional<protocol::bytes32>& authed) {
  if (!authed)
    return rejection{reason::auth_required, "authenticate as the author to send this request"};
  if (*authed != ev.pubkey)
    return rejection{reason::restricted, "this request may only be sent by its author"};
  return std::nullopt;
}

/// A relay-signed list or room state (13534, 33534, 39000-39005): a newer one replaces it
/// wherever it still waits for its reader.
bool superseded_by_newer(const protocol::event& ev) {
  return protocol::relay_signed_kind(ev.kind) && protocol::has_address(ev.kind);
}

/// A live event's frame; a relay-signed list or room state carries its address, so that a newer
/// one replaces it in the socket's queue while it waits there.
shared_event_frame live_frame(const std::shared_ptr<const std::string>& head, const live_event& event) {
  const auto& ev = *event.ev;
  if (!superseded_by_newer(ev))
    return shared_event_frame{head, event.json};
  return shared_event_frame{head, event.json, std::make_shared<const std::string>(protocol::address_of(ev)),
                            ev.created_at};
}

/// Per address of the replaceable and addressable events among `held`, the newest created_at:
/// one written twice while history was read is sent after EOSE only as its newest, which the
/// history may already have sent (an older one after it would look like the current one).
std::unordered_map<std::string, std::int64_t> newest_by_address(const std::vector<live_event>& held) {
  std::unordered_map<std::string, std::int64_t> newest;
  for (const auto& event : held) {
    if (!protocol::has_address(event.ev->kind))
      continue;
    auto [it, first] = newest.try_emplace(protocol::address_of(*event.ev), event.ev->created_at);
    if (!first)
      it->second = std::max(it->second, event.ev->created_at);
  }
  return newest;
}

/// Whether `event` is older than the newest of its address in `newest` (newest_by_address).
bool older_than_held(const live_event& event, const std::unordered_map<std::string, std::int64_t>& newest) {
  if (newest.empty() || !protocol::has_address(event.ev->kind))
    return false;
  auto it = newest.find(protocol::address_of(*event.ev));
  return it != newest.end() && event.ev->created_at < it->second;
}

/// Whether `held` waits for EOSE with what `newer` replaces (its address, no newer than it).
bool replaced_by(const live_event& held, const protocol::event& newer, const std::string& address) {
  const auto& ev = *held.ev;
  return ev.kind == newer.kind && ev.created_at <= newer.created_at && protocol::address_of(ev) == address;
}

} // namespace

connection::connection(connection_policy policy, std::string challenge)
  : policy_(std::move(policy)),
    challenge_(std::move(challenge)),
    events_rate_(policy_.event_rate, policy_.event_burst),
    frames_rate_(policy_.frame_rate, policy_.frame_burst),
    filter_share_(policy_.ip,
                  {policy_.max_filters_per_address, policy_.max_filter_values_per_address,
                   policy_.max_broad_filters_per_address},
                  policy_.pod_filters) {}

double frame_cost(frame_type type, std::size_t bytes, const connection_policy& policy) {
  constexpr double bytes_per_token = 16 * 1024;
  double cost = 1 + static_cast<double>(bytes) / bytes_per_token;
  if (type == frame_type::auth)
    cost += policy.auth_cost;
  return cost;
}

double tag_rows_cost(const protocol::event& ev) noexcept {
  const auto rows = std::count_if(ev.tags.begin(), ev.tags.end(),
                                  [](const auto& tag) { return tag.size() >= 2 && tag[0].size() == 1; });
  return static_cast<double>(rows) / indexed_tags_per_token;
}

std::size_t held_live_bytes_within(std::size_t max_outbound, std::size_t max_history, std::size_t most) noexcept {
  constexpr std::size_t least = 64 * 1024;
  const std::size_t room = max_outbound > max_history ? max_outbound - max_history : 0;
  return std::max(least, std::min(room, most));
}

filter_holding cost_of(const std::vector<protocol::filter>& filters) {
  filter_holding cost;
  for (const auto& f : filters) {
    ++cost.filters;
    const std::size_t keys = (f.ids ? f.ids->size() : 0) + (f.authors ? f.authors->size() : 0);
    std::size_t values = keys + (f.kinds ? f.kinds->size() : 0);
    cost.value_bytes += keys * sizeof(protocol::bytes32);
    for (const auto& tag : f.tags) {
      values += tag.values.size();
      for (const auto& value : tag.values)
        cost.value_bytes += value.size();
    }
    cost.values += values;
    if (!f.ids && !f.authors && !f.kinds && f.tags.empty())
      ++cost.broad;
  }
  return cost;
}

void drop_unindexed_tag_values(std::vector<protocol::filter>& filters) {
  for (auto& f : filters)
    for (auto& tag : f.tags)
      std::erase_if(tag.values, [](const std::string& v) { return !storage::is_indexable_tag_value(v); });
}

std::optional<rejection> connection::charge_frame(double cost, double clock) {
  if (!frames_rate_.try_take(clock, cost))
    return rejection{reason::rate_limited, "slow down, too many messages on this connection"};
  if (policy_.ip && !policy_.ip->try_take_frames(clock, cost))
    return rejection{reason::rate_limited, "slow down, too many messages from your address"};
  return std::nullopt;
}

std::optional<rejection> connection::charge_store_request(double clock) {
  if (policy_.ip && !policy_.ip->try_take_request(clock))
    return rejection{reason::rate_limited, "too many membership and room requests from your address; try again shortly"};
  return std::nullopt;
}

bool connection::closed_community() const {
  // The database's current word (the community actor keeps it in the cache) beats the access
  // the community had when this connection opened.
  auto now_closed = policy_.members ? policy_.members->closed() : std::nullopt;
  return now_closed.value_or(policy_.closed_community);
}

bool connection::known_member(const protocol::bytes32& pubkey) const {
  return policy_.members && policy_.members->is_member(pubkey);
}

bool connection::may_invite(const protocol::bytes32& pubkey) const {
  if (!policy_.members)
    return false;
  auto role = policy_.members->role_of(pubkey);
  return storage::manages(role) || (role && policy_.members->members_may_invite());
}

bool connection::may_manage(const protocol::bytes32& pubkey) const {
  if (!policy_.members)
    return true; // nothing cached: the database decides
  return storage::manages(policy_.members->role_of(pubkey));
}

bool connection::must_leave() const {
  return closed_community() && (!authenticated_ || lost_access());
}

namespace {

const rejection too_many_awaiting_storage{reason::rate_limited, "too many events awaiting storage"};

} // namespace

std::optional<rejection> connection::charge_event(double clock) {
  if (!events_rate_.try_take(clock))
    return rejection{reason::rate_limited, "slow down, too many events"};
  if (weights_in_flight_.size() >= policy_.max_events_in_flight)
    return too_many_awaiting_storage;
  return std::nullopt;
}

std::optional<rejection> connection::check_storage_share(std::int64_t weight) const {
  if (weights_in_flight_.empty() || storage_bytes_in_flight_ + weight <= policy_.max_storage_bytes_in_flight)
    return std::nullopt;
  return too_many_awaiting_storage;
}

std::optional<rejection> connection::admit_vanish(const protocol::event& ev, std::int64_t now,
                                                  double clock) {
  if (auto refused = charge_event(clock))
    return refused;
  if (auto bad_time = protocol::check_created_at(ev, now, policy_.created_at))
    return bad_time;
  if (auto elsewhere = protocol::check_vanish_request(ev, policy_.host))
    return elsewhere;
  if (auto forged = protocol::verify_event(ev))
    return forged;
  if (policy_.vanish_requests && !policy_.vanish_requests->try_take(clock))
    return rejection{reason::rate_limited, "too many requests to vanish on this relay; try again in a minute"};
  return std::nullopt;
}

std::optional<rejection> connection::admit_event(const protocol::event& ev, std::int64_t now,
                                                 double clock) {
  admitted_as_.reset();
  if (ev.kind == protocol::vanish_kind)
    return admit_vanish(ev, now, clock);
  if (closed_community() && !authenticated_ && !admits_zap(ev, now, clock))
    return rejection{reason::auth_required, "this community requires authentication"};
  // A non-member of a closed community may authenticate and then only ask to join.
  if (lost_access() && ev.kind != 28934 && !admits_zap(ev, now, clock))
    return not_a_member();
  if (auto banned = check_bans(ev))
    return banned;
  if (auto refused = charge_event(clock))
    return refused;
  if (ev.kind == protocol::auth_kind)
    return protocol::invalid("AUTH events are sent with AUTH, not EVENT");
  if (protocol::relay_only_kind(ev.kind))
    return rejection{reason::restricted, "only the relay may publish kind " + std::to_string(ev.kind)};
  if (ev.kind == 5 && deletion_targets(ev) > policy_.max_deletion_targets)
    return rejection{reason::invalid, "a deletion may name at most "
                                        + std::to_string(policy_.max_deletion_targets) + " events"};
  if (protocol::has_expired(ev, now))
    return protocol::invalid("event has already expired");
  if (auto bad_time = protocol::check_created_at(ev, now, policy_.created_at))
    return bad_time;
  if (is_membership_request(ev.kind) || protocol::is_room_request_kind(ev.kind)) {
    if (auto refused = check_request_author(ev, authenticated_))
      return refused;
  } else if (protocol::is_protected(ev)) {
    if (!authenticated_)
      return rejection{reason::auth_required, "this event may only be published by its author"};
    if (*authenticated_ != ev.pubkey)
      return rejection{reason::restricted, "this event may only be published by its author"};
  }
  if (protocol::reposts_protected_event(ev))
    return protocol::invalid("a repost may not embed another author's protected event (NIP-70)");
  if (author_not_admitted(ev) && !admits_zap(ev, now, clock) && !admits_gift_wrap(ev))
    return rejection{reason::restricted, "the author of this event is not a member of this community"};
  if (auto refused = check_room_event(ev, now))
    return refused;
  return protocol::verify_event(ev);
}

std::optional<rejection> connection::check_bans(const protocol::event& ev) const {
  if (!policy_.bans)
    return std::nullopt;
  // A ban covers the author (their joins included) and, when authenticated, the sender.
  if (policy_.bans->is_banned_pubkey(ev.pubkey)
      || (authenticated_ && policy_.bans->is_banned_pubkey(*authenticated_)))
    return rejection{reason::blocked, "you are banned from this community"};
  if (policy_.bans->is_banned_event(ev.id))
    return rejection{reason::blocked, "this event is banned from this community"};
  return std::nullopt;
}

bool connection::banned_out(const protocol::event& ev) const {
  // The relay's own lists and deltas are never banned (management_store refuses it), but their
  // ids are predictable: a ban of one not written yet must not withhold it when it comes.
  if (protocol::relay_signed_kind(ev.kind))
    return false;
  return policy_.bans && policy_.bans->withholds(ev);
}

bool connection::banned_rendered(std::string_view json) const {
  if (!policy_.bans || !policy_.bans->withholds_rendered(json))
    return false;
  auto kind = protocol::rendered_kind(json);
  return !kind || !protocol::relay_signed_kind(*kind);
}

std::optional<rejection> connection::authenticate(const protocol::event& ev, std::int64_t now) {
  protocol::auth_expectation expected{challenge_, policy_.host, now, 600};
  if (auto bad = protocol::check_auth_event(ev, expected))
    return bad;
  if (auto bad = protocol::verify_event(ev))
    return bad;
  // One key per connection: every check (membership, rooms, gift wraps, who may send a request)
  // reads one reader, and a second key taking the first one's place would leave its open
  // subscriptions silent. NIP-42 lets a client add keys; the apps never do, and this says why.
  if (authenticated_ && *authenticated_ != ev.pubkey)
    return rejection{reason::restricted,
                     "this connection is authenticated as another key; open another connection for this one"};
  authenticated_ = ev.pubkey;
  return std::nullopt;
}

std::optional<rejection> connection::may_read() const {
  if (closed_community() && !authenticated_)
    return rejection{reason::auth_required, "this community requires authentication"};
  if (lost_access())
    return not_a_member();
  return std::nullopt;
}

bool connection::admits_zap(const protocol::event& ev, std::int64_t now, double clock) {
  if (admitted_as_)
    return true;
  if (ev.kind != protocol::zap_receipt_kind || !policy_.members || !events_rate_.try_take(clock))
    return false;
  auto sender = protocol::zap_sender(ev, policy_.host, now);
  if (!sender || !policy_.members->is_member(*sender))
    return false;
  admitted_as_ = sender;
  return true;
}

bool connection::admits_gift_wrap(const protocol::event& ev) {
  if (ev.kind != protocol::gift_wrap_kind || !authenticated_ || !policy_.members
      || !policy_.members->is_member(*authenticated_))
    return false;
  admitted_as_ = authenticated_;
  return true;
}

bool connection::author_not_admitted(const protocol::event& ev) const {
  // A join request comes from a non-member by nature; its author is checked above. The access
  // is the database's now, not the connection's at its start: a member's socket that outlived
  // a switch to closed must not carry non-members' events in.
  return closed_community() && policy_.members && ev.kind != join_request_kind
         && !policy_.members->is_member(ev.pubkey);
}

bool connection::lost_access() const {
  return closed_community() && authenticated_ && policy_.members
         && !policy_.members->is_member(*authenticated_);
}

std::optional<rejection> over_budget(const filter_holding& total, const connection_policy& policy,
                                     std::string_view where) {
  auto at_most = [](std::size_t bound) { return " (at most " + std::to_string(bound) + ")"; };
  if (total.filters > policy.max_filters)
    return rejection{reason::rate_limited,
                     "too many filters " + std::string(where) + at_most(policy.max_filters)};
  if (total.values > policy.max_filter_values)
    return rejection{reason::rate_limited, "too many filter values " + std::string(where)
                                             + at_most(policy.max_filter_values)};
  if (total.value_bytes > policy.max_filter_value_bytes)
    return rejection{reason::rate_limited, "filter values too long " + std::string(where)
                                             + " (at most " + std::to_string(policy.max_filter_value_bytes)
                                             + " bytes)"};
  if (total.broad > policy.max_broad_filters)
    return rejection{reason::rate_limited, "too many filters without ids, authors, kinds or tags"
                                             + at_most(policy.max_broad_filters)};
  return std::nullopt;
}

std::optional<rejection> over_subscription_cap(std::size_t open, const connection_policy& policy) {
  const auto cap = policy.limits.max_subscriptions_per_connection;
  if (open < cap)
    return std::nullopt;
  return rejection{reason::rate_limited, "too many open subscriptions (at most " + std::to_string(cap) + ")"};
}

std::optional<rejection> connection::check_count(const std::vector<protocol::filter>& filters) const {
  // A COUNT holds nothing in the fan-out, but its statement is as costly as a REQ's history: the
  // COUNTs under way may ask no more than a REQ could on a connection holding nothing.
  filter_holding total = counts_held_;
  total += cost_of(filters);
  return over_budget(total, policy_, "in COUNTs under way");
}

protocol::result<std::uint64_t>
connection::open_subscription(const std::string& id, const std::vector<protocol::filter>& filters,
                              const waiting_requests& waiting) {
  auto existing = subscriptions_.find(id);
  if (existing == subscriptions_.end())
    if (auto over = over_subscription_cap(subscriptions_.size() + waiting.count, policy_))
      return *over;
  filter_holding wanted = cost_of(filters);
  filter_holding total = held_;
  if (existing != subscriptions_.end())
    total -= existing->second.cost;
  total += wanted;
  filter_holding with_waiting = total;
  with_waiting += waiting.cost;
  if (auto over = over_budget(with_waiting, policy_, "open on this connection"))
    return *over;
  if (auto refused = filter_share_.resize(total))
    return refusal_of(*refused, filter_share_.address_most());
  held_ = total;
  subscription& sub = subscriptions_[id];
  release_held(sub);
  sub = subscription{};
  sub.generation = next_generation_++;
  sub.cost = wanted;
  sub.frame_head = std::make_shared<const std::string>(protocol::event_frame_prefix(id));
  return sub.generation;
}

bool connection::is_open(const std::string& id, std::uint64_t generation) const {
  auto it = subscriptions_.find(id);
  return it != subscriptions_.end() && it->second.generation == generation;
}

bool connection::close_subscription(const std::string& id) {
  auto it = subscriptions_.find(id);
  if (it == subscriptions_.end())
    return false;
  held_ -= it->second.cost;
  (void)filter_share_.resize(held_); // shrinking always succeeds
  release_held(it->second);
  subscriptions_.erase(it);
  return true;
}

history_frames connection::history_reply(const std::string& id, std::uint64_t generation,
                                         std::vector<std::shared_ptr<const std::string>> events,
                                         double clock, bool last) {
  history_frames out;
  auto it = subscriptions_.find(id);
  if (it == subscriptions_.end() || it->second.generation != generation || it->second.live)
    return out;
  subscription& sub = it->second;
  out.events.reserve(events.size());
  auto& sent = sub.sent_in_history;
  sub.history_sent_at = clock;
  // A room hides only its own events, so without rooms no row needs its tags read.
  const bool any_room = policy_.members && policy_.members->rooms()->concerns_rows();
  // A room hidden since the query started: its SQL kept what borrows that room's access.
  const bool lost_room = any_room && !events.empty() && lost_a_room(sub);
  for (auto& json : events) {
    // A row read before a ban this pod has loaded since goes no further than one held live.
    if (!json || (any_room && !rendered_visible(*json)) || banned_rendered(*json))
      continue;
    if (lost_room && borrows_unnamed_rooms(*json)) {
      ++withheld_;
      continue;
    }
    (void)sent.add(*json);
    out.events.push_back(shared_event_frame{sub.frame_head, std::move(json)});
  }
  if (!last)
    return out;
  out.closing.push_back(protocol::render_eose(id));
  sent.seal();
  // Held while history was read: a ban, or a room's deletion or change, may have come since,
  // or the event's expiration (NIP-40: not sent once it passes).
  const std::int64_t now = unix_now();
  const auto newest = newest_by_address(sub.held);
  for (const auto& held : sub.held)
    if (!sent.contains(held.ev->id) && !older_than_held(held, newest) && !banned_out(*held.ev)
        && event_visible(held) && !protocol::has_expired(*held.ev, now))
      out.closing.push_back(protocol::render_event_frame(id, *held.json));
  release_held(sub);
  sub.rooms_at_start.reset();
  sub.live = true;
  return out;
}

std::vector<std::string> connection::history_arrived(const std::string& id,
                                                     std::uint64_t generation,
                                                     std::vector<std::string> events,
                                                     double clock,
                                                     bool last) {
  std::vector<std::shared_ptr<const std::string>> shared;
  shared.reserve(events.size());
  for (auto& json : events)
    shared.push_back(std::make_shared<const std::string>(std::move(json)));
  auto reply = history_reply(id, generation, std::move(shared), clock, last);
  std::vector<std::string> frames;
  frames.reserve(reply.events.size() + reply.closing.size());
  for (const auto& frame : reply.events)
    frames.push_back(frame.flattened());
  std::move(reply.closing.begin(), reply.closing.end(), std::back_inserter(frames));
  return frames;
}

std::optional<shared_event_frame> connection::live_arrived(const std::string& id, std::uint64_t generation,
                                                   const live_event& event, double clock) {
  auto it = subscriptions_.find(id);
  if (it == subscriptions_.end() || it->second.generation != generation)
    return std::nullopt;
  // The cache changes before its revocation reaches this connection through the fan-out: an
  // event matched meanwhile (local or bridged) follows the cache, as a REQ would, for a removed
  // member and for an anonymous reader of a community closed since alike.
  if (must_leave())
    return std::nullopt;
  subscription& sub = it->second;
  if (banned_out(*event.ev) || !event_visible(event)) {
    ++withheld_;
    return std::nullopt;
  }
  if (sub.live) {
    if (!sub.sent_in_history.empty()) {
      if (clock - sub.history_sent_at > history_echo_window)
        sub.sent_in_history.forget();
      else if (sub.sent_in_history.contains(event.ev->id))
        return std::nullopt;
    }
    return live_frame(sub.frame_head, event);
  }
  // Held until EOSE; past the bound the oldest would be lost, so the newest are dropped instead
  // and the client still gets every event up to the bound in order (after one dropped for its
  // size, a smaller one that would fit is dropped too: no gap). A list that churn rewrote each
  // second while the history was read holds only its newest.
  if (superseded_by_newer(*event.ev) && !sub.dropping_held)
    drop_replaced_held(sub, event);
  const std::size_t size = event.json->size();
  if (!sub.dropping_held && sub.held.size() < policy_.max_buffered_live
      && sub.held_bytes + size <= policy_.max_buffered_live_bytes
      && held_live_ < policy_.max_buffered_live_per_connection
      && held_live_bytes_ + size <= policy_.max_buffered_live_bytes_per_connection) {
    sub.held_bytes += size;
    sub.held.push_back(event);
    ++held_live_;
    held_live_bytes_ += size;
  } else {
    sub.dropping_held = true;
    ++dropped_live_;
  }
  return std::nullopt;
}

void connection::drop_replaced_held(subscription& sub, const live_event& newer) {
  const auto address = protocol::address_of(*newer.ev);
  std::size_t count = 0;
  std::size_t freed = 0;
  for (const auto& held : sub.held)
    if (replaced_by(held, *newer.ev, address)) {
      ++count;
      freed += held.json->size();
    }
  // Only when the newer one is then held, within the subscription's bounds and the connection's:
  // a list dropped for one that does not fit would leave the client the events after it without
  // either.
  const std::size_t newer_bytes = newer.json->size();
  if (count == 0 || sub.held.size() - count >= policy_.max_buffered_live
      || sub.held_bytes - freed + newer_bytes > policy_.max_buffered_live_bytes
      || held_live_ - count >= policy_.max_buffered_live_per_connection
      || held_live_bytes_ - freed + newer_bytes > policy_.max_buffered_live_bytes_per_connection)
    return;
  std::erase_if(sub.held, [&](const live_event& held) { return replaced_by(held, *newer.ev, address); });
  sub.held_bytes -= freed;
  held_live_ -= count;
  held_live_bytes_ -= freed;
}

void connection::release_held(subscription& sub) noexcept {
  held_live_ -= sub.held.size();
  held_live_bytes_ -= sub.held_bytes;
  sub.held.clear();
  sub.held.shrink_to_fit();
  sub.held_bytes = 0;
}

void connection::expire_history_echoes(double clock) {
  // Only past EOSE: while history is still read (a slow reader, a slow page), the ids already
  // sent decide at EOSE which held live events are not sent again.
  for (auto& [id, sub] : subscriptions_)
    if (sub.live && !sub.sent_in_history.empty() && clock - sub.history_sent_at > history_echo_window)
      sub.sent_in_history.forget();
}

std::size_t connection::remembered_history_ids() const {
  std::size_t n = 0;
  for (const auto& [id, sub] : subscriptions_)
    n += sub.sent_in_history.size();
  return n;
}

std::vector<std::string> connection::subscription_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, sub] : subscriptions_)
    ids.push_back(id);
  return ids;
}

} // namespace comb::actors
